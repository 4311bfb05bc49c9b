"""Typed keyword similarities.

Pairs are stored with ``keyword_id_1 < keyword_id_2`` (one row per pair and
type); for a directional relation ``source_keyword_id`` keeps which side it
starts from, so ordering the ids never loses the direction.
"""

from __future__ import annotations

from typing import Any

from kb_indexer.errors import NotFoundError, UsageError, ValidationError
from kb_indexer.store.connection import inserted_id
from kb_indexer.store.documents import KeywordIds
from kb_indexer.store.engine import is_postgres
from kb_indexer.store.provenance import bury, origin_text
from kb_indexer.defaults import SIMILARITY_TYPES as SIMILARITY_TYPES
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection



def check_similarity_type(value: object, where: str = "") -> str:
    """The one rule for a similarity type: one of ``SIMILARITY_TYPES``. Anything else, given as an option or
    argument (API, CLI, MCP, chat, a query's types and weights), is bad usage: ``UsageError`` (exit 2) with
    this message (``where`` is added after the value, e.g. ``" in weights"``). Data that carries a type (a
    similarities file, an import, a learned item) reports the same message as invalid input: see
    :func:`validate_relation`."""
    if not isinstance(value, str) or value not in SIMILARITY_TYPES:
        raise UsageError(f"Unknown similarity type {value!r}{where}; expected one of: {', '.join(SIMILARITY_TYPES)}")
    return value


def validate_relation(keyword1: str, keyword2: str, sim_type: str, context: str, score: float) -> None:
    if not isinstance(keyword1, str) or not normalize_keyword(keyword1):
        raise ValidationError("keyword1 must be a non-empty string")
    if not isinstance(keyword2, str) or not normalize_keyword(keyword2):
        raise ValidationError("keyword2 must be a non-empty string")
    if normalize_keyword(keyword1) == normalize_keyword(keyword2):
        raise ValidationError(f"A keyword cannot be related to itself: {keyword1!r}")
    try:
        check_similarity_type(sim_type)
    except UsageError as exc:  # in data (a file's entry, an import, a learned item) it is invalid input, exit 1
        raise ValidationError(exc.message) from None
    if not isinstance(context, str) or not context.strip():
        raise ValidationError("context must be a non-empty string saying when the relation applies")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not (0.0 <= float(score) <= 1.0):
        raise ValidationError(f"score must be a number between 0 and 1, got {score!r}")


def upsert_similarity(
    conn: Connection,
    ids: KeywordIds,
    keyword1: str,
    keyword2: str,
    sim_type: str,
    context: str,
    score: float = 0.5,
    directional: bool = False,
    kind: str = "person",
    file: str | None = None,
    learned_id: int | None = None,
) -> tuple[int, bool]:
    """Insert or update one relation; returns (id, created).

    ``kind``/``file``/``learned_id`` say where its values came from (see kb_indexer.store.provenance).
    """
    validate_relation(keyword1, keyword2, sim_type, context, score)
    a, b = ids.ensure(keyword1), ids.ensure(keyword2)
    k1, k2 = (a, b) if a < b else (b, a)
    source = a if directional else None
    origin = origin_text(kind, file)
    values = (k1, k2, sim_type, context.strip(), float(score), int(bool(directional)), source, origin, kind, file,
              learned_id, kind)
    if is_postgres(conn):   # one round trip: insert or update, and which it was (xmax is 0 for an insert)
        got = conn.execute(_UPSERT_PG, values).fetchone()
        return int(got[0]), bool(got[1])
    row = conn.execute(
        "SELECT id FROM keyword_similarities WHERE keyword_id_1 = ? AND keyword_id_2 = ? AND similarity_type = ?",
        (k1, k2, sim_type),
    ).fetchone()
    if row:
        conn.execute(
            "UPDATE keyword_similarities SET context = ?, score = ?, directional = ?, source_keyword_id = ?, "
            "origin = ?, origin_kind = ?, origin_file = ?, learned_id = ?, "
            f"author = {_AUTHOR} WHERE id = ?",
            (context.strip(), float(score), int(bool(directional)), source, origin, kind, file, learned_id, kind,
             row[0]),
        )
        return row[0], False
    return inserted_id(conn.execute(_INSERT, values)), True


#: A relation's author: the asker (kb_indexer.store.team) for a person's `relate`, NULL for derived or imported values.
_AUTHOR = "CASE WHEN ? = 'person' THEN kb_asker() END"
_INSERT = ("INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context, score, "
           "directional, source_keyword_id, origin, origin_kind, origin_file, learned_id, author) "
           f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {_AUTHOR}) RETURNING id")
_UPSERT_PG = (_INSERT.removesuffix(" RETURNING id") + " ON CONFLICT (keyword_id_1, keyword_id_2, similarity_type) "
              "DO UPDATE SET context = excluded.context, score = excluded.score, directional = excluded.directional, "
              "source_keyword_id = excluded.source_keyword_id, origin = excluded.origin, "
              "origin_kind = excluded.origin_kind, origin_file = excluded.origin_file, "
              "learned_id = excluded.learned_id, author = excluded.author RETURNING id, (xmax = 0)")


def relation_keys(conn: Connection, ids: KeywordIds, keyword1: str, keyword2: str,
                  sim_type: str) -> tuple[int, int, str] | None:
    """(keyword_id_1, keyword_id_2, type) of a relation between two known keywords, else None."""
    a, b = ids.get(keyword1), ids.get(keyword2)
    if a is None or b is None:
        return None
    return min(a, b), max(a, b), sim_type


def delete_similarity(conn: Connection, keyword1: str, keyword2: str, sim_type: str | None = None) -> int:
    ids = KeywordIds(conn)
    a, b = ids.get(keyword1), ids.get(keyword2)
    if a is None or b is None:
        missing = keyword1 if a is None else keyword2
        raise NotFoundError(f"Unknown keyword: {missing!r}")
    if sim_type is not None:
        check_similarity_type(sim_type)
    k1, k2 = min(a, b), max(a, b)
    sql = "DELETE FROM keyword_similarities WHERE keyword_id_1 = ? AND keyword_id_2 = ?"
    args: list[Any] = [k1, k2]
    if sim_type:
        sql += " AND similarity_type = ?"
        args.append(sim_type)
    gone = conn.execute(sql.replace("DELETE FROM", "SELECT id, similarity_type FROM"), args).fetchall()
    if not gone:
        what = f" of type {sim_type}" if sim_type else ""
        raise NotFoundError(f"No relation{what} between {keyword1!r} and {keyword2!r}")
    for sid, t in gone:
        # A person deleted it: a tombstone keeps sync and learn from creating it again, and a learned
        # item standing for it is undone (``learned list`` no longer shows it active).
        bury(conn, k1, k2, t)
        conn.execute("UPDATE learned_items SET status = 'removed', updated_at = strftime('%Y-%m-%dT%H:%M:%S', "
                     "'now') WHERE kind = 'similarity' AND similarity_id = ? AND status = 'active'", (sid,))
    deleted: int = conn.execute(sql, args).rowcount
    return deleted


_NEIGHBOUR_SQL = """
SELECT s.id, s.similarity_type, s.context, s.score, s.directional, s.source_keyword_id, s.origin,
       CASE WHEN s.keyword_id_1 = :kid THEN s.keyword_id_2 ELSE s.keyword_id_1 END AS other_id,
       k.keyword AS other_keyword, k.display AS other_display
FROM keyword_similarities s
JOIN keywords k ON k.id = CASE WHEN s.keyword_id_1 = :kid THEN s.keyword_id_2 ELSE s.keyword_id_1 END
WHERE (s.keyword_id_1 = :kid OR s.keyword_id_2 = :kid)
"""


def neighbours(conn: Connection, keyword_id: int, sim_type: str | None = None,
               limit: int | None = None) -> list[dict[str, Any]]:
    """The relations touching a keyword (of ``sim_type`` if given), with the direction seen from it: the
    strongest first (ties by keyword, then type), at most ``limit`` (None: all)."""
    sql = _NEIGHBOUR_SQL
    args: dict[str, Any] = {"kid": keyword_id}
    if sim_type:
        sql += " AND s.similarity_type = :t"
        args["t"] = sim_type
    sql += " ORDER BY s.score DESC, k.keyword, s.similarity_type"
    if limit is not None:
        sql += " LIMIT :n"
        args["n"] = limit
    out = []
    for r in conn.execute(sql, args):
        if not r["directional"]:
            direction = "both"
        elif r["source_keyword_id"] == keyword_id:
            direction = "outgoing"
        else:
            direction = "incoming"
        out.append({
            "id": r["id"],
            "keyword": r["other_display"],
            "normalized": r["other_keyword"],
            "keyword_id": r["other_id"],
            "similarity_type": r["similarity_type"],
            "context": r["context"],
            "score": r["score"],
            "directional": bool(r["directional"]),
            "direction": direction,
            "origin": r["origin"],
        })
    return out


def count_neighbours(conn: Connection, keyword_id: int, sim_type: str | None = None) -> int:
    """How many relations :func:`neighbours` would give without a limit."""
    sql = "SELECT count(*) FROM keyword_similarities WHERE (keyword_id_1 = :kid OR keyword_id_2 = :kid)"
    args: dict[str, Any] = {"kid": keyword_id}
    if sim_type:
        sql += " AND similarity_type = :t"
        args["t"] = sim_type
    n: int = conn.execute(sql, args).fetchone()[0]
    return n
