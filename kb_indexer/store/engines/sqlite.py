"""SQLite's engine: the full text in FTS5's ``documents_fts`` (``porter unicode61 remove_diacritics 2``, ranked
by FTS5's ``bm25()``), each change logged in ``fulltext_log`` for the sparse index
(:mod:`kb_indexer.store.sparse`).

A snippet is FTS5's ``snippet()``, or ``None`` for a body over ``max_chars`` (``snippet()`` costs the square
of its matches: the caller makes one itself from the body).
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, ContextManager, Iterator

from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engines.shapes import FtsRow, JsonItems, TextQuery
from kb_indexer.store.file_lock import file_lock

if TYPE_CHECKING:
    from kb_indexer.store.fts_tokens import Tokenizer

__all__ = ["SQLITE", "SYNC_CACHE_KIB", "SqliteEngine", "db_file", "phrase_sql"]

# SQLite's page cache during a sync (KiB, as ``PRAGMA cache_size`` takes it negated; the default is 2 MB): a
# batch inserts keyword rows all over the keyword index and FTS5 merges its segments; with the default the same
# pages are read again and again (measured at 50k documents: ~4 s of a ~55 s sync, most of it system time).
SYNC_CACHE_KIB = -65536


def db_file(conn: Connection) -> str:
    """The SQLite connection's main database file ("" for an in-memory one)."""
    return str(conn.execute("PRAGMA database_list").fetchone()[2] or "")

# A connection's tokenizer, kept between questions: what it learned (each word's tokens, asked of SQLite once)
# serves the next question, and the documents a sync wrote but did not fold yet (read with every question until
# the fold) are tokenised without asking SQLite again. Keyed by the connection's id; the tokenizer holds the
# connection, so the id cannot pass to another connection while the entry exists.
_TOKENIZERS: dict[int, Tokenizer] = {}
_TOKENIZERS_MAX = 4

SCAN_PER_ID = 100   # snippets: one pass over the matches while there are at most this many documents per id

# FTS5's snippet() for a body under the size given; NULL (the caller's bounded scan) for a longer one.
_SNIPPET_SQL = ("CASE WHEN length(body) > ? THEN NULL "
                "ELSE snippet(documents_fts, -1, '**', '**', '…', ?) END")


def _rank_clause(weights: tuple[float, ...]) -> str:
    # Only floats we format ourselves reach the SQL text.
    return "bm25(documents_fts, " + ", ".join(f"{float(w):.4f}" for w in weights) + ")"


def _rank_function(weights: tuple[float, ...]) -> str:
    return "bm25(" + ", ".join(f"{float(w):.4f}" for w in weights) + ")"


def phrase_sql(weights: tuple[float, ...]) -> str:
    """``(rowid, bm25)`` of every document matching one string literal (the parameter)."""
    return f"SELECT rowid, -{_rank_clause(weights)} FROM documents_fts WHERE documents_fts MATCH ?"


class SqliteEngine:
    """SQLite, a file on this machine: statements cost no round trip; one user's index."""

    round_trips = False
    shared = False
    sparse_index = True
    snapshot_begin = "BEGIN"

    def json_items(self, column: str, field: str) -> JsonItems:
        return JsonItems(f"json_each({column}) j", f"json_extract(j.value, '$.{field}')", f"json_valid({column})")

    # -- connections, transactions and locks -------------------------------------------------------

    def pipelined(self, conn: Connection) -> ContextManager[None]:
        return nullcontext()   # statements run one by one, as always

    def broken(self, conn: Connection) -> bool:
        return False

    def one_at_a_time(self, conn: Connection, what: str) -> None:
        pass   # BEGIN IMMEDIATE already lets one writer in at a time

    def exclusive(self, conn: Connection, job: str, waiting: str) -> ContextManager[None]:
        return file_lock(db_file(conn), job, waiting)

    @contextmanager
    def bulk_writing(self, conn: Connection) -> Iterator[None]:
        cache = conn.execute("PRAGMA cache_size").fetchone()[0]
        conn.execute(f"PRAGMA cache_size = {SYNC_CACHE_KIB}")
        try:
            yield
        finally:
            conn.execute(f"PRAGMA cache_size = {int(cache)}")

    def has_table(self, conn: Connection, name: str) -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                            (name,)).fetchone() is not None

    def db_file(self, conn: Connection) -> str:
        return db_file(conn)

    def file_identity(self, conn: Connection) -> tuple[Any, ...] | None:
        path = db_file(conn)
        if not path:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return path, st.st_ino, st.st_dev

    # -- the catalog (export and import) ---------------------------------------------------------------

    def tables(self, conn: Connection) -> list[str]:
        """User tables in creation order (parents before children)."""
        return [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]

    def columns(self, conn: Connection, table: str) -> list[dict[str, Any]]:
        return [dict(r) for r in conn.execute(f'PRAGMA table_info("{table}")')]

    def rows(self, conn: Connection, table: str, batch: int) -> Iterator[dict[str, Any]]:
        """In rowid order, read as they are used (SQLite reads as it goes: ``batch`` is not needed)."""
        assert isinstance(conn, sqlite3.Connection)
        cur = conn.cursor()
        cur.row_factory = None   # plain tuples: no sqlite3.Row per row
        cur.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row))

    def before_import(self, conn: Connection, tables: list[str]) -> None:
        pass

    def defer_foreign_keys(self, conn: Connection) -> None:
        conn.execute("PRAGMA defer_foreign_keys = ON")

    def foreign_key_problem(self, conn: Connection, tables: list[str]) -> str | None:
        bad = conn.execute("PRAGMA foreign_key_check").fetchall()
        return f"{len(bad)} rows reference missing rows (first in table {bad[0][0]!r})" if bad else None

    # -- documents and vectors ----------------------------------------------------------------------

    def document_count(self, conn: Connection, exact_from: int) -> int:
        """Below ``exact_from`` documents the highest id (an upper bound, one index look-up)."""
        top = conn.execute("SELECT max(id) FROM documents").fetchone()[0] or 0
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0]) if top >= exact_from else int(top)

    def vector_search(self, conn: Connection) -> dict[str, Any]:
        return {"engine": "numpy", "pgvector": None, "index": None, "note": None}

    # -- full text ----------------------------------------------------------------------------------

    def one_read(self) -> ContextManager[None]:
        return nullcontext()   # SQLite reads its index directly: nothing to share

    def tokenizer(self, conn: Connection) -> Tokenizer:
        from kb_indexer.store.fts_tokens import Tokenizer  # lazy: start-up time (a cold search tokenises nothing)

        kept = _TOKENIZERS.get(id(conn))
        if kept is None or kept.conn is not conn:
            if len(_TOKENIZERS) >= _TOKENIZERS_MAX:
                _TOKENIZERS.clear()
            kept = _TOKENIZERS[id(conn)] = Tokenizer(conn)
        return kept

    def write_rows(self, conn: Connection, rows: list[FtsRow]) -> None:
        conn.executemany("DELETE FROM documents_fts WHERE rowid = ?", [(r[0],) for r in rows])
        conn.executemany("INSERT INTO fulltext_log (document_id) VALUES (?)", [(r[0],) for r in rows])
        conn.executemany("INSERT INTO documents_fts (rowid, title, summary, keywords, body) VALUES (?, ?, ?, ?, ?)",
                         rows)

    def delete_rows(self, conn: Connection, doc_ids: list[int]) -> None:
        conn.executemany("DELETE FROM documents_fts WHERE rowid = ?", [(d,) for d in doc_ids])
        conn.executemany("INSERT INTO fulltext_log (document_id) VALUES (?)", [(d,) for d in doc_ids])

    def clear(self, conn: Connection) -> None:
        conn.execute("DELETE FROM documents_fts")

    def bodies(self, conn: Connection, doc_ids: list[int]) -> dict[int, str]:
        if len(doc_ids) == 1:
            row = conn.execute("SELECT body FROM documents_fts WHERE rowid = ?", (doc_ids[0],)).fetchone()
            return {doc_ids[0]: row[0]} if row else {}
        return dict(conn.execute("SELECT rowid, body FROM documents_fts WHERE rowid IN "
                                 "(SELECT value FROM json_each(?))", (json.dumps(doc_ids),)).fetchall())

    def heads(self, conn: Connection, doc_ids: list[int], max_chars: int) -> list[tuple[int, str, str, str]]:
        return [(r[0], r[1], r[2], r[3]) for r in conn.execute(
            "SELECT d.id, d.filepath, coalesce(d.title, ''), substr(coalesce(f.body, ''), 1, ?) FROM documents d "
            "LEFT JOIN documents_fts f ON f.rowid = d.id WHERE d.id IN (SELECT value FROM json_each(?))",
            (max_chars, json.dumps(doc_ids)))]

    def titled_texts(self, conn: Connection, every: int) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in conn.execute(
            "SELECT d.filepath, f.title, f.body FROM documents d JOIN documents_fts f ON f.rowid = d.id "
            "WHERE d.id % ? = 0", (every,))]

    def ranked(self, conn: Connection, query: TextQuery, limit: int, weights: tuple[float, ...], tokens: int,
               max_chars: int, snippet_rows: int | None) -> list[tuple[int, float, str | None]]:
        """When the snippets' pass would be one scan of the matches (see :meth:`snippets`), the best rows are
        sorted by ``bm25()`` and their snippets made in that pass: FTS5's own ``ORDER BY rank`` with ``rank
        MATCH`` prepares a nested statement for every query (on Cranfield, 225 questions at ``--limit 100``:
        14.5 M instructions a question against 10.0 M, the pass costing about 3 M). For a few rows of a large
        index FTS5 sorts and makes their snippets in one statement (a look-up per id would cost more)."""
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

    def scores_of(self, conn: Connection, query: TextQuery, doc_ids: list[int],
                  weights: tuple[float, ...]) -> dict[int, float]:
        sql = (f"SELECT rowid, {_rank_clause(weights)} FROM documents_fts WHERE documents_fts MATCH ? "
               "AND rowid IN (SELECT value FROM json_each(?))")
        return {r[0]: -r[1] for r in conn.execute(sql, (query.match, json.dumps(doc_ids)))}

    def all_scores(self, conn: Connection, query: TextQuery, weights: tuple[float, ...]) -> dict[int, float]:
        sql = f"SELECT rowid, {_rank_clause(weights)} FROM documents_fts WHERE documents_fts MATCH ?"
        return {r[0]: -r[1] for r in conn.execute(sql, (query.match,))}

    def count_matching(self, conn: Connection, query: TextQuery, cap: int | None) -> int:
        sql = "SELECT count(*) FROM (SELECT 1 FROM documents_fts WHERE documents_fts MATCH ? LIMIT ?)"
        return int(conn.execute(sql, (query.match, -1 if cap is None else cap)).fetchone()[0])

    def count_each(self, conn: Connection, queries: list[TextQuery], cap: int) -> list[int]:
        return [self.count_matching(conn, q, cap) for q in queries]

    def count_found(self, conn: Connection, query: TextQuery | None, doc_ids: list[int]) -> int:
        ids = "SELECT value FROM json_each(?) WHERE value IN (SELECT id FROM documents)"
        if not query:
            return int(conn.execute(f"SELECT count(*) FROM ({ids})", (json.dumps(doc_ids),)).fetchone()[0])
        if not doc_ids:   # the matches alone: no UNION (a temporary b-tree of every matching rowid) to build
            return self.count_matching(conn, query, None)
        sql = f"SELECT count(*) FROM (SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? UNION {ids})"
        return int(conn.execute(sql, (query.match, json.dumps(doc_ids))).fetchone()[0])

    def snippets(self, conn: Connection, query: TextQuery, doc_ids: list[int], tokens: int,
                 max_chars: int) -> dict[int, str | None]:
        return _snippets(conn, query, doc_ids, tokens, max_chars, _scan_pays(conn, len(doc_ids)))


def _scan_pays(conn: Connection, ids: int) -> bool:
    """Whether one pass over a query's matches beats a look-up per id for ``ids`` documents: ``rowid IN
    (...)`` makes FTS5 run the whole query again for each id (about 0.1 ms an id with ten terms), the pass
    checks each match against the ids (under 1 µs a match). It wins unless the documents outnumber the ids by
    far (a large index, few ids)."""
    return _document_bound(conn) <= SCAN_PER_ID * ids


def _snippets(conn: Connection, query: TextQuery, doc_ids: list[int], tokens: int, max_chars: int,
              scan_all: bool) -> dict[int, str | None]:
    scan = "+" if scan_all else ""
    sql = (f"SELECT rowid, {_SNIPPET_SQL} FROM documents_fts "
           f"WHERE documents_fts MATCH ? AND {scan}rowid IN (SELECT value FROM json_each(?))")
    return dict(conn.execute(sql, (max_chars, tokens, query.match, json.dumps(doc_ids))).fetchall())


def _document_bound(conn: Connection) -> int:
    """At least the number of indexed documents (the largest document id), from the index alone."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()[0])


SQLITE = SqliteEngine()
