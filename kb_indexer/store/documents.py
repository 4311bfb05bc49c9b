"""Documents, their keywords and their full-text rows."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable, cast

from kb_indexer.errors import NotFoundError
from kb_indexer.store import fulltext
from kb_indexer.store.connection import inserted_id
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engine import is_postgres
from kb_indexer.store.engines import engine_of
from kb_indexer.text import clean_display, normalize_keyword, now_iso


# A keyword `kbindex enrich` generated (source 'generated') is a weaker tag than a person's: it counts this
# much in the keyword part of a query's score (document_keywords.weight; see kb_indexer.search.fusion), and
# it is not written into the full-text row's keywords column (a statistical keyword is a word of the body:
# there it would count that word twice). Measured on Cranfield by bench/enrich_eval.py.
GENERATED_TAG_WEIGHT = 0.25


class KeywordIds:
    """Keyword id lookup with an in-memory cache (one per command / sync run)."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self._cache: dict[str, int] = {}
        self._display: dict[int, str] = {}

    def get(self, keyword: str) -> int | None:
        norm = normalize_keyword(keyword)
        if norm in self._cache:
            return self._cache[norm]
        row = self.conn.execute("SELECT id, display FROM keywords WHERE keyword = ?", (norm,)).fetchone()
        if row:
            kid: int = row[0]
            self._cache[norm] = kid
            self._display[kid] = row[1]
            return kid
        return None

    def display(self, kid: int) -> str:
        """The keyword as stored for display (its first spelling), as the full-text row shows it."""
        return self._display[kid]

    def ensure(self, keyword: str, category: str | None = None) -> int:
        norm = normalize_keyword(keyword)
        kid = self.get(norm)
        if kid is None:
            cur = self.conn.execute(
                "INSERT INTO keywords (keyword, display, category) VALUES (?, ?, ?) RETURNING id",
                (norm, clean_display(keyword), category),
            )
            kid = inserted_id(cur)
            self._cache[norm] = kid
            self._display[kid] = clean_display(keyword)
        return kid

    def ensure_all(self, keywords: list[tuple[str, str | None]]) -> list[int]:
        """The ids of ``keywords`` ((keyword, category) pairs), as :meth:`ensure` gives them one by one, in two
        statements at most on PostgreSQL (one round trip per keyword there is what made ``sync`` slow)."""
        if not is_postgres(self.conn):
            return [self.ensure(kw, category) for kw, category in keywords]
        displays: dict[str, str] = {}
        categories: dict[str, str | None] = {}
        norms = [normalize_keyword(kw) for kw, _ in keywords]
        for norm, (kw, category) in zip(norms, keywords):
            if norm not in self._cache and norm not in displays:
                displays[norm], categories[norm] = clean_display(kw), category
        if displays:
            for norm, (kid, display) in _pg_keyword_ids(self.conn, list(displays), displays, categories).items():
                self._cache[norm] = kid
                self._display[kid] = display
        return [self._cache[norm] for norm in norms]


# PostgreSQL: the ids of keywords (an array), by their place in it (a NUL in text is stored as U+FFFD, so the
# stored keyword is not always the one asked for); the keywords not stored yet are inserted in order.
_PG_KEYWORD_IDS = ("SELECT u.n, k.id, k.display FROM unnest(?::text[]) WITH ORDINALITY AS u(keyword, n) "
                   "JOIN keywords k ON k.keyword = u.keyword")
_PG_NEW_KEYWORDS = ("INSERT INTO keywords (keyword, display, category) SELECT keyword, display, category FROM "
                    "unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(keyword, display, category, n) "
                    "ORDER BY n")


def _pg_keyword_ids(conn: Connection, norms: list[str], displays: dict[str, str],
                    categories: dict[str, str | None]) -> dict[str, tuple[int, str]]:
    """``{keyword: (id, display)}`` for ``norms`` (normalised, distinct) on PostgreSQL: the stored ones in one
    round trip, the others inserted and read back in one more (a pipeline)."""
    got = {norms[int(r[0]) - 1]: (int(r[1]), r[2]) for r in conn.execute(_PG_KEYWORD_IDS, (norms,))}
    missing = [n for n in norms if n not in got]
    if missing:
        with cast(Any, conn).pipelined():
            conn.execute(_PG_NEW_KEYWORDS, (missing, [displays[n] for n in missing],
                                            [categories[n] for n in missing]))
            cur = conn.execute(_PG_KEYWORD_IDS, (missing,))
        got.update({missing[int(r[0]) - 1]: (int(r[1]), r[2]) for r in cur.fetchall()})
    return got


def count(conn: Connection, exact_from: int) -> int:
    """How many documents the index holds, as ranking needs it: exact from ``exact_from`` documents on; below
    that, on SQLite, the highest id (an upper bound, one index look-up). On PostgreSQL always exact, from the
    full-text totals that every write of a document's text keeps in the same transaction (one row, where
    ``count(*)`` reads an index entry per document: 2.6 ms a question at 20,000 documents)."""
    return engine_of(conn).document_count(conn, exact_from)


def get_document(conn: Connection, filepath: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute("SELECT * FROM documents WHERE filepath = ?", (filepath,)).fetchone()
    return row


MAX_PATH_GUESSES = 3


def close_paths(conn: Connection, filepath: str) -> list[str]:
    """Indexed documents a path that is not one may have meant: ``filepath`` with ``.md`` added, or, for a
    file name (no folder), the documents of that name in a folder (``docker.md``: ``work/docker.md``), at
    most :data:`MAX_PATH_GUESSES`, by path. Read only when a path was not found."""
    has_suffix = filepath.endswith((".md", ".markdown"))
    if not has_suffix and get_document(conn, filepath + ".md") is not None:
        return [filepath + ".md"]
    if "/" in filepath:
        return []
    names = [filepath] if has_suffix else [filepath, filepath + ".md"]
    found: list[str] = []
    for name in names:   # the last len(name) + 1 characters are "/" + name
        found += [r[0] for r in conn.execute(
            "SELECT filepath FROM documents WHERE length(filepath) > ? AND "
            "substr(filepath, length(filepath) - ?) = ? ORDER BY filepath LIMIT ?",
            (len(name), len(name), "/" + name, MAX_PATH_GUESSES)).fetchall()]
    return sorted(found)[:MAX_PATH_GUESSES]


def path_hint(conn: Connection, filepath: str) -> str:
    """What to tell a person whose path is not an indexed document: the paths meant (:func:`close_paths`),
    else where to look."""
    close = close_paths(conn, filepath)
    if close:
        return f" (did you mean {' or '.join(close)}?)"
    return " (`kbindex list-docs` lists the indexed documents; a new file is indexed by `kbindex sync`)"


def require_document(conn: Connection, filepath: str) -> sqlite3.Row:
    row = get_document(conn, filepath)
    if row is None:
        raise NotFoundError(f"Document not in the index: {filepath}{path_hint(conn, filepath)}")
    return row


def upsert_document(
    conn: Connection,
    ids: KeywordIds,
    *,
    filepath: str,
    title: str,
    summary: str,
    body: str,
    keywords: Iterable[tuple[str, str | None, str]],
    content_hash: str | None,
    stat_sig: str | None,
    keywords_file: str | None,
    fts_rows: list[Any] | None = None,
    text_hash: str | None = None,
    stored: bool = False,
) -> tuple[int, bool]:
    """Insert or replace a document and its file keywords; keeps learned keywords.

    ``keywords`` yields (keyword, category, source); ``text_hash``: of the markdown text alone (None keeps the
    stored one). Returns (id, created). With ``fts_rows`` the
    full-text row is appended there for :func:`write_fts_rows` instead of written now: a batch writes
    its full-text rows last, because every statement that opens a statement journal (any insert with
    foreign keys) makes FTS5 flush its pending terms, and interleaving costs ~5x. ``stored``: the caller
    knows the document is in the index (an edited one: on PostgreSQL all its statements go in one round trip).
    """
    now = now_iso()
    if is_postgres(conn):
        return _upsert_postgres(conn, ids, (filepath, title, summary, content_hash, stat_sig, keywords_file, now,
                                            now, text_hash), body, list(keywords), fts_rows, stored)
    row = conn.execute("SELECT id FROM documents WHERE filepath = ?", (filepath,)).fetchone()
    if row is None:
        cur = conn.execute(
            "INSERT INTO documents (filepath, title, summary, content_hash, stat_sig, keywords_file, "
            "created_at, updated_at, text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (filepath, title, summary, content_hash, stat_sig, keywords_file, now, now, text_hash),
        )
        doc_id, created = inserted_id(cur), True
    else:
        doc_id, created = row[0], False
        conn.execute(
            "UPDATE documents SET title = ?, summary = ?, content_hash = ?, stat_sig = ?, "
            "keywords_file = ?, updated_at = ?, text_hash = coalesce(?, text_hash) WHERE id = ?",
            (title, summary, content_hash, stat_sig, keywords_file, now, text_hash, doc_id),
        )
        conn.execute("DELETE FROM document_keywords WHERE document_id = ? AND source != 'learned'", (doc_id,))
    rows = [(doc_id, ids.ensure(kw, category), category, source,
             GENERATED_TAG_WEIGHT if source == "generated" else 1.0) for kw, category, source in keywords]
    _link_keywords(conn, rows, created)
    # Nothing stored yet for a new document: its keywords are just these (no need to read them back).
    shown = " ; ".join(ids.display(r[1]) for r in rows if r[3] != "generated") if created \
        else doc_keyword_text(conn, doc_id)
    row = (doc_id, title or "", summary or "", shown, body)
    if fts_rows is not None:
        fts_rows.append(row)
    else:
        write_fts_rows(conn, [row])
    return doc_id, created


#: PostgreSQL: a document inserted or updated (``created``: ``xmax`` is 0 only for a row this statement
#: inserted), a new one's keyword rows (arrays, in order) in the same statement.
_PG_UPSERT = (
    "WITH d AS (INSERT INTO documents (filepath, title, summary, content_hash, stat_sig, keywords_file, "
    "created_at, updated_at, text_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (filepath) DO UPDATE SET "
    "title = excluded.title, summary = excluded.summary, content_hash = excluded.content_hash, "
    "stat_sig = excluded.stat_sig, keywords_file = excluded.keywords_file, updated_at = excluded.updated_at, "
    "text_hash = coalesce(excluded.text_hash, documents.text_hash) RETURNING id, (xmax = 0) AS created), "
    "k AS (INSERT INTO document_keywords (document_id, keyword_id, category, source, weight) "
    "SELECT d.id, u.kid, u.category, u.source, u.weight FROM d CROSS JOIN "
    "unnest(?::bigint[], ?::text[], ?::text[], ?::float8[]) WITH ORDINALITY AS u(kid, category, source, weight, n) "
    "WHERE d.created ORDER BY u.n) "
    "SELECT id, created FROM d"
)


def _pg_upsert(conn: Connection, values: tuple[Any, ...], links: list[tuple[int, str | None, str, float]]
               ) -> tuple[int, bool]:
    row = conn.execute(_PG_UPSERT, _pg_upsert_params(values, links)).fetchone()
    return int(row[0]), bool(row[1])


def _pg_upsert_params(values: tuple[Any, ...], links: list[tuple[int, str | None, str, float]]) -> tuple[Any, ...]:
    """:data:`_PG_UPSERT`'s parameters: the document's values, then its keyword rows as four arrays."""
    return (*values, *([r[i] for r in links] for i in range(4)))


def _upsert_postgres(conn: Connection, ids: KeywordIds, values: tuple[Any, ...], body: str,
                     keywords: list[tuple[str, str | None, str]], fts_rows: list[Any] | None,
                     stored: bool) -> tuple[int, bool]:
    """:func:`upsert_document` on PostgreSQL, where every statement is a round trip: the same rows in fewer
    (a new document: its unknown keywords' ids in one or two, then one statement; an edited one: two, or one
    when the caller knows it is ``stored``)."""
    kids = ids.ensure_all([(kw, category) for kw, category, _ in keywords])
    rows = [(kid, category, source, GENERATED_TAG_WEIGHT if source == "generated" else 1.0)
            for kid, (_, category, source) in zip(kids, keywords)]
    links = list({r[0]: r for r in rows}.values())   # as _link_keywords: first place, last values
    if stored:
        doc_id, created, shown = _pg_replace(conn, values, links, rows)
    else:
        doc_id, created = _pg_upsert(conn, values, links)
        if created:
            shown = " ; ".join(ids.display(r[0]) for r in rows if r[2] != "generated")
        else:
            with cast(Any, conn).pipelined():   # one round trip: replace the keyword rows, read the text back
                conn.execute("DELETE FROM document_keywords WHERE document_id = ? AND source != 'learned'", (doc_id,))
                conn.executemany(_RELINK, [(doc_id, *r) for r in rows])
                cur = conn.execute(_KEYWORD_TEXT, (doc_id,))
            shown = " ; ".join(r[0] for r in cur.fetchall())
    row = (doc_id, values[1] or "", values[2] or "", shown, body)
    if fts_rows is not None:
        fts_rows.append(row)
    else:
        write_fts_rows(conn, [row])
    return doc_id, created


def _pg_replace(conn: Connection, values: tuple[Any, ...], links: list[tuple[int, str | None, str, float]],
                rows: list[tuple[int, str | None, str, float]]) -> tuple[int, bool, str]:
    """A stored document upserted, its keyword rows replaced and its keyword text read back, by its path, in one
    round trip; (id, created, keyword text). Were it not stored after all, the rows it was created with are
    replaced by the same ones."""
    path = values[0]
    with cast(Any, conn).pipelined():
        upserted = conn.execute(_PG_UPSERT, _pg_upsert_params(values, links))
        conn.execute(f"DELETE FROM document_keywords WHERE document_id = ({_BY_PATH}) AND source != 'learned'",
                     (path,))
        conn.executemany(_RELINK_BY_PATH, [(path, *r) for r in rows])
        text = conn.execute(_KEYWORD_TEXT_BY_PATH, (path,))
    row = upserted.fetchone()
    return int(row[0]), bool(row[1]), " ; ".join(r[0] for r in text.fetchall())


_BY_PATH = "SELECT id FROM documents WHERE filepath = ?"
#: A document's keyword row written again: a person's keyword replaces a learned row for the same keyword; a
#: generated one (`kbindex enrich`, weaker) does not: the learned row keeps its weight and its item.
_ON_CONFLICT = ("ON CONFLICT(document_id, keyword_id) DO UPDATE SET category = excluded.category, "
                "source = excluded.source, weight = excluded.weight, learned_id = NULL "
                "WHERE NOT (document_keywords.source = 'learned' AND excluded.source = 'generated')")
_RELINK_BY_PATH = ("INSERT INTO document_keywords (document_id, keyword_id, category, source, weight) "
                   f"SELECT ({_BY_PATH}), ?, ?, ?, ? {_ON_CONFLICT}")


_LINK = "INSERT INTO document_keywords (document_id, keyword_id, category, source, weight) VALUES (?, ?, ?, ?, ?)"


def _link_keywords(conn: Connection, rows: list[tuple[int, int, str | None, str, float]], created: bool) -> None:
    """Store a document's keyword rows; a keyword listed twice keeps its first place and its last values."""
    if created:  # nothing stored for the document yet: plain inserts (an upsert costs ~20% more at sync scale)
        conn.executemany(_LINK, list({r[1]: r for r in rows}.values()))
        return
    conn.executemany(_RELINK, rows)


_RELINK = f"{_LINK} {_ON_CONFLICT}"


def write_fts_rows(conn: Connection, rows: list[tuple[int, str, str, str, str]]) -> None:
    """(Re)write full-text rows ``(document id, title, summary, keywords text, body)``, logged for the sparse
    index (:mod:`kb_indexer.store.sparse`)."""
    fulltext.write_rows(conn, rows)


def doc_keyword_text(conn: Connection, doc_id: int) -> str:
    return " ; ".join(r[0] for r in conn.execute(_KEYWORD_TEXT, (doc_id,)))


_KEYWORD_TEXT = ("SELECT k.display FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
                 "WHERE dk.document_id = ? AND dk.source != 'generated' ORDER BY dk.id")
_KEYWORD_TEXT_BY_PATH = _KEYWORD_TEXT.replace("dk.document_id = ?", f"dk.document_id = ({_BY_PATH})")


def write_fts(conn: Connection, doc_id: int, *, title: str, summary: str, body: str | None = None) -> None:
    """(Re)write the full-text row of a document; ``body=None`` keeps the stored body."""
    if body is None:
        body = fulltext.body(conn, doc_id)
    fulltext.write_rows(conn, [(doc_id, title or "", summary or "", doc_keyword_text(conn, doc_id), body)])


def refresh_fts_keywords(conn: Connection, doc_id: int) -> None:
    doc = conn.execute("SELECT title, summary FROM documents WHERE id = ?", (doc_id,)).fetchone()
    if doc:
        write_fts(conn, doc_id, title=doc["title"], summary=doc["summary"])


def delete_document(conn: Connection, filepath: str) -> int:
    doc = require_document(conn, filepath)
    conn.execute("DELETE FROM documents WHERE id = ?", (doc["id"],))
    doc_id: int = doc["id"]
    return doc_id


def document_keywords(conn: Connection, doc_id: int) -> list[dict[str, Any]]:
    return [
        {"keyword": r["display"], "category": r["category"], "source": r["source"]}
        for r in conn.execute(
            "SELECT k.display, dk.category, dk.source FROM document_keywords dk "
            "JOIN keywords k ON k.id = dk.keyword_id WHERE dk.document_id = ? ORDER BY dk.id",
            (doc_id,),
        )
    ]


def get_body(conn: Connection, doc_id: int) -> str:
    return fulltext.body(conn, doc_id)


def hanging_off(conn: Connection, paths: list[str]) -> dict[str, tuple[int, str | None, int, int]]:
    """``{path: (id, text hash, active learned items, feedback marks)}`` of the documents at ``paths`` that
    something a person did hangs off (a learned item or feedback): what a removal would lose, what a rename
    with an edit carries over. No statement but two cheap ones when nothing was learned or marked."""
    if not paths or (conn.execute("SELECT 1 FROM learned_items WHERE status = 'active' LIMIT 1").fetchone() is None
                     and conn.execute("SELECT 1 FROM query_feedback LIMIT 1").fetchone() is None):
        return {}
    rows = conn.execute(
        "SELECT d.filepath, d.id, d.text_hash, (SELECT COUNT(*) FROM learned_items li WHERE li.document_id = d.id "
        "AND li.status = 'active'), (SELECT COUNT(*) FROM query_feedback q WHERE q.filepath = d.filepath) "
        "FROM documents d WHERE d.filepath IN (SELECT value FROM json_each(?)) ORDER BY d.filepath",
        (json.dumps(paths),))
    return {str(p): (int(i), t, int(n), int(f)) for p, i, t, n, f in rows if n or f}
