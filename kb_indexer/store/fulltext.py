"""The full-text index of documents, on either engine: every read and write of it goes through here.

SQLite keeps it in ``documents_fts`` (FTS5, ``porter unicode61 remove_diacritics 2``, ranked by FTS5's
``bm25()``); PostgreSQL in the tables of :mod:`kb_indexer.store.pg.fulltext` (the same tokens and the same
bm25, from the index's own statistics). Each function dispatches on :func:`kb_indexer.store.engine.is_postgres`;
features never write FTS5 syntax or SQL against the full-text tables.

A query is a :class:`TextQuery`: plain ``terms`` (a term of several tokens is a phrase) and, for FTS5, their
``match`` expression (string literals OR-ed: :mod:`kb_indexer.search.fulltext` builds both). Scores are
bm25, higher is better. A snippet is ``None`` when the caller is to make one itself from the body (a body
over ``max_chars`` on SQLite, where FTS5's ``snippet()`` costs the square of its matches; always on PostgreSQL).
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from types import ModuleType
from typing import TYPE_CHECKING, Any, ContextManager, Protocol

from kb_indexer.store.engine import is_postgres
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.store.fts_tokens import Tokenizer

Row = tuple[int, str, str, str, str]   # (document id, title, summary, keywords text, body)


class TextQuery(Protocol):
    @property
    def terms(self) -> tuple[str, ...]: ...      # plain terms, in order (a repeated term counts again)
    @property
    def match(self) -> str: ...                  # FTS5's MATCH expression of the same terms


def _pg() -> ModuleType:
    import kb_indexer.store.pg.fulltext as pg  # lazy: the PostgreSQL engine (optional extra), never on SQLite's path

    return pg


def one_read(conn: Any) -> ContextManager[None]:
    """A block in which every full-text read of the same terms gives the first one's scores (one question: one
    snapshot of the scores, read once). SQLite reads its index directly: nothing to share."""
    return _pg().one_read() if is_postgres(conn) else nullcontext()


def _raw(conn: Any) -> Any:
    return conn.raw


# A connection's tokenizer, kept between questions: what it learned (each word's tokens, asked of SQLite once)
# serves the next question, and the documents a sync wrote but did not fold yet (read with every question until
# the fold) are tokenised without asking SQLite again. Keyed by the connection's id; the tokenizer holds the
# connection, so the id cannot pass to another connection while the entry exists.
_TOKENIZERS: dict[int, Tokenizer] = {}
_TOKENIZERS_MAX = 4


def tokenizer(conn: Any) -> Tokenizer:
    """Tokens as the full-text index makes them, this connection's tokenizer (see ``_TOKENIZERS``; on
    PostgreSQL: SQLite's tokenizer on a private in-memory database, the one the index was written with)."""
    if is_postgres(conn):
        return _pg().tokenizer()  # type: ignore[no-any-return]
    from kb_indexer.store.fts_tokens import Tokenizer  # lazy: start-up time (a cold search tokenises nothing)

    kept = _TOKENIZERS.get(id(conn))
    if kept is None or kept.conn is not conn:
        if len(_TOKENIZERS) >= _TOKENIZERS_MAX:
            _TOKENIZERS.clear()
        kept = _TOKENIZERS[id(conn)] = Tokenizer(conn)
    return kept


# -- writing ------------------------------------------------------------------------------------------


def write_rows(conn: Any, rows: list[Row]) -> None:
    """(Re)write the full-text rows of documents (inside the caller's transaction). On SQLite each change
    is logged for the sparse index (:mod:`kb_indexer.store.sparse`)."""
    if is_postgres(conn):
        _pg().write_rows(_raw(conn), rows)
        return
    conn.executemany("DELETE FROM documents_fts WHERE rowid = ?", [(r[0],) for r in rows])
    conn.executemany("INSERT INTO fulltext_log (document_id) VALUES (?)", [(r[0],) for r in rows])
    conn.executemany("INSERT INTO documents_fts (rowid, title, summary, keywords, body) VALUES (?, ?, ?, ?, ?)", rows)


def delete_rows(conn: Any, doc_ids: list[int]) -> None:
    """Remove documents' full-text rows (deleting a document removes its row by itself)."""
    if is_postgres(conn):
        _pg().delete_rows(_raw(conn), doc_ids)
        return
    conn.executemany("DELETE FROM documents_fts WHERE rowid = ?", [(d,) for d in doc_ids])
    conn.executemany("INSERT INTO fulltext_log (document_id) VALUES (?)", [(d,) for d in doc_ids])


def clear(conn: Any) -> None:
    """Remove every full-text row (an import that replaces everything)."""
    if is_postgres(conn):
        _pg().clear(_raw(conn))
        return
    conn.execute("DELETE FROM documents_fts")


# -- reading the stored text --------------------------------------------------------------------------


def body(conn: Any, doc_id: int) -> str:
    """A document's indexed body ("" when it has no full-text row)."""
    return bodies(conn, [doc_id]).get(doc_id, "")


def bodies(conn: Any, doc_ids: list[int]) -> dict[int, str]:
    """``{document id: body}`` of the documents that have a full-text row."""
    if not doc_ids:
        return {}
    if is_postgres(conn):
        return dict(_pg().bodies(_raw(conn), doc_ids))
    if len(doc_ids) == 1:
        row = conn.execute("SELECT body FROM documents_fts WHERE rowid = ?", (doc_ids[0],)).fetchone()
        return {doc_ids[0]: row[0]} if row else {}
    return dict(conn.execute("SELECT rowid, body FROM documents_fts WHERE rowid IN (SELECT value FROM json_each(?))",
                             (json.dumps(doc_ids),)).fetchall())


def heads(conn: Any, doc_ids: list[int], max_chars: int) -> list[tuple[int, str, str, str]]:
    """``(id, filepath, title, the first max_chars characters of the body)`` of those of ``doc_ids`` that are
    documents, in one statement."""
    if not doc_ids:
        return []
    if is_postgres(conn):
        return list(_pg().heads(_raw(conn), doc_ids, max_chars))
    return [(r[0], r[1], r[2], r[3]) for r in conn.execute(
        "SELECT d.id, d.filepath, coalesce(d.title, ''), substr(coalesce(f.body, ''), 1, ?) FROM documents d "
        "LEFT JOIN documents_fts f ON f.rowid = d.id WHERE d.id IN (SELECT value FROM json_each(?))",
        (max_chars, json.dumps(doc_ids)))]


def titled_texts(conn: Any, every: int = 1) -> list[tuple[str, str, str]]:
    """``(filepath, title, body)`` of the indexed documents whose id is a multiple of ``every`` (1: all)."""
    if is_postgres(conn):
        return list(_pg().titled_texts(_raw(conn), every))
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT d.filepath, f.title, f.body FROM documents d JOIN documents_fts f ON f.rowid = d.id "
        "WHERE d.id % ? = 0", (every,))]


# -- ranking -------------------------------------------------------------------------------------------


def _rank_clause(weights: tuple[float, ...]) -> str:
    # Only floats we format ourselves reach the SQL text.
    return "bm25(documents_fts, " + ", ".join(f"{float(w):.4f}" for w in weights) + ")"


# FTS5's snippet() for a body under the size given; NULL (the caller's bounded scan) for a longer one.
_SNIPPET_SQL = ("CASE WHEN length(body) > ? THEN NULL "
                "ELSE snippet(documents_fts, -1, '**', '**', '…', ?) END")


def ranked(conn: Any, query: TextQuery, limit: int, weights: tuple[float, ...], tokens: int,
           max_chars: int, snippet_rows: int | None = None) -> list[tuple[int, float, str | None]]:
    """The best ``limit`` documents, best first, as ``(document id, bm25, snippet or None)``; in the pass
    below, snippets only for the first ``snippet_rows`` (None: all; the others' come later if needed).

    On SQLite, when the snippets' pass would be one scan of the matches (see :func:`snippets`), the best
    rows are sorted by ``bm25()`` and their snippets made in that pass: FTS5's own ``ORDER BY rank`` with
    ``rank MATCH`` prepares a nested statement for every query (on Cranfield, 225 questions at ``--limit
    100``: 14.5 M instructions a question against 10.0 M, the pass costing about 3 M). For a few rows of a
    large index FTS5 sorts and makes their snippets in one statement (a look-up per id would cost more)."""
    if is_postgres(conn):
        return [(d, s, None) for d, s in _pg().ranked(_raw(conn), query.terms, weights, limit)]
    if not _scan_pays(conn, limit):
        sql = (f"SELECT rowid, rank, {_SNIPPET_SQL} FROM documents_fts WHERE documents_fts MATCH ? "
               "AND rank MATCH ? ORDER BY rank LIMIT ?")
        rows = conn.execute(sql, (max_chars, tokens, query.match, _rank_function(weights), limit)).fetchall()
        return [(r[0], -r[1], r[2]) for r in rows]
    sql = (f"SELECT rowid, {_rank_clause(weights)} AS score FROM documents_fts WHERE documents_fts MATCH ? "
           "ORDER BY score LIMIT ?")
    rows = conn.execute(sql, (query.match, limit)).fetchall()
    wanted = [r[0] for r in rows[:snippet_rows]] if snippet_rows is not None else [r[0] for r in rows]
    snips = _snippets(conn, query, wanted, tokens, max_chars, True) if wanted else {}
    return [(r[0], -r[1], snips.get(r[0])) for r in rows]


def _rank_function(weights: tuple[float, ...]) -> str:
    return "bm25(" + ", ".join(f"{float(w):.4f}" for w in weights) + ")"


def scores_of(conn: Any, query: TextQuery, doc_ids: list[int], weights: tuple[float, ...]) -> dict[int, float]:
    """bm25 of the given documents that match (one look-up each on SQLite: for a few documents)."""
    if is_postgres(conn):
        wanted = set(doc_ids)
        return {d: s for d, s in all_scores(conn, query, weights).items() if d in wanted}
    sql = (f"SELECT rowid, {_rank_clause(weights)} FROM documents_fts WHERE documents_fts MATCH ? "
           "AND rowid IN (SELECT value FROM json_each(?))")
    return {r[0]: -r[1] for r in conn.execute(sql, (query.match, json.dumps(doc_ids)))}


def all_scores(conn: Any, query: TextQuery, weights: tuple[float, ...]) -> dict[int, float]:
    """bm25 of every matching document, in one pass."""
    if is_postgres(conn):
        return dict(_pg().all_scores(_raw(conn), query.terms, weights))
    sql = f"SELECT rowid, {_rank_clause(weights)} FROM documents_fts WHERE documents_fts MATCH ?"
    return {r[0]: -r[1] for r in conn.execute(sql, (query.match,))}


def phrase_sql(weights: tuple[float, ...]) -> str:
    """SQLite: ``(rowid, bm25)`` of every document matching one string literal (the parameter), for the
    sparse index's phrases (:func:`kb_indexer.search.sparse.score`; the sparse index is SQLite's only)."""
    return f"SELECT rowid, -{_rank_clause(weights)} FROM documents_fts WHERE documents_fts MATCH ?"


def phrase_scores(conn: Connection, sql: str, literal: str) -> list[tuple[int, float]]:
    """Run a :func:`phrase_sql` statement for one string literal."""
    return [(r[0], r[1]) for r in conn.execute(sql, (literal,))]


def count_matching(conn: Any, query: TextQuery, cap: int | None = None) -> int:
    """How many documents match ``query``; counting stops at ``cap``."""
    if is_postgres(conn):
        return int(_pg().count_matching(_raw(conn), query.terms, cap))
    sql = "SELECT count(*) FROM (SELECT 1 FROM documents_fts WHERE documents_fts MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (query.match, -1 if cap is None else cap)).fetchone()[0])


def count_each(conn: Any, queries: list[TextQuery], cap: int) -> list[int]:
    """How many documents match each of ``queries`` (each one term); counting stops at ``cap``. On PostgreSQL
    the terms of one token are counted in one statement (one round trip for a question's terms)."""
    if not is_postgres(conn):
        return [count_matching(conn, q, cap) for q in queries]
    return [int(n) for n in _pg().count_each(_raw(conn), [q.terms for q in queries], cap)]


def count_found(conn: Any, query: TextQuery | None, doc_ids: list[int]) -> int:
    """How many indexed documents match ``query`` or are among ``doc_ids`` (found another way)."""
    ids = "SELECT value FROM json_each(?) WHERE value IN (SELECT id FROM documents)"
    if is_postgres(conn):
        matching = set(_pg().matching(_raw(conn), query.terms)) if query else set()
        others = [d for d in doc_ids if d not in matching]   # often none: no round trip then
        return len(matching) + (len(set(_pg().existing(_raw(conn), others))) if others else 0)
    if not query:
        return int(conn.execute(f"SELECT count(*) FROM ({ids})", (json.dumps(doc_ids),)).fetchone()[0])
    if not doc_ids:   # the matches alone: no UNION (a temporary b-tree of every matching rowid) to build
        return count_matching(conn, query)
    sql = f"SELECT count(*) FROM (SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? UNION {ids})"
    return int(conn.execute(sql, (query.match, json.dumps(doc_ids))).fetchone()[0])


def snippets(conn: Any, query: TextQuery, doc_ids: list[int], tokens: int, max_chars: int) -> dict[int, str | None]:
    """FTS5's passage around the matches of each given document that matches (``**bold**``), or None where
    the caller makes one from the body (see the module docstring)."""
    if is_postgres(conn):
        wanted = set(doc_ids)
        return {d: None for d in _pg().matching(_raw(conn), query.terms) if d in wanted}
    return _snippets(conn, query, doc_ids, tokens, max_chars, _scan_pays(conn, len(doc_ids)))


def _scan_pays(conn: Any, ids: int) -> bool:
    """Whether one pass over a query's matches beats a look-up per id for ``ids`` documents: ``rowid IN
    (...)`` makes FTS5 run the whole query again for each id (about 0.1 ms an id with ten terms), the pass
    checks each match against the ids (under 1 µs a match). It wins unless the documents outnumber the ids by
    far (a large index, few ids)."""
    return _document_bound(conn) <= SCAN_PER_ID * ids


def _snippets(conn: Any, query: TextQuery, doc_ids: list[int], tokens: int, max_chars: int,
              scan_all: bool) -> dict[int, str | None]:
    scan = "+" if scan_all else ""
    sql = (f"SELECT rowid, {_SNIPPET_SQL} FROM documents_fts "
           f"WHERE documents_fts MATCH ? AND {scan}rowid IN (SELECT value FROM json_each(?))")
    return dict(conn.execute(sql, (max_chars, tokens, query.match, json.dumps(doc_ids))).fetchall())


SCAN_PER_ID = 100   # snippets: one pass over the matches while there are at most this many documents per id


def _document_bound(conn: Any) -> int:
    """At least the number of indexed documents (the largest document id), from the index alone."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()[0])
