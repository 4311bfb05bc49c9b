"""PostgreSQL's engine: a server that a team shares; the full text in the tables of
:mod:`kb_indexer.store.pg.fulltext` (FTS5's tokens and bm25, from the index's own statistics). Imported with
the connection (psycopg), never on SQLite's path.

Snippets are always ``None``: the caller makes one from the body.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, ContextManager, Iterator

from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engine import ADVISORY_NAMESPACE, advisory_key
from kb_indexer.store.engines.shapes import FtsRow, JsonItems, TextQuery
from kb_indexer.store.errors import IntegrityError
from kb_indexer.store.pg import catalog, fulltext as pg
from kb_indexer.store.pg.connection import PgConnection
from kb_indexer.store.pg import vectors as pg_vectors
from kb_indexer.store.pg.locks import advisory_lock

if TYPE_CHECKING:
    from kb_indexer.store.fts_tokens import Tokenizer

__all__ = ["POSTGRES", "PgConnection", "PostgresEngine"]


def _pg(conn: Connection) -> PgConnection:
    """``conn`` as what it is: this engine is only ever a ``PgConnection``'s (:func:`engine_of`)."""
    assert isinstance(conn, PgConnection)
    return conn


def _raw(conn: Connection) -> Any:
    """The psycopg connection (what the modules of :mod:`kb_indexer.store.pg` take)."""
    return _pg(conn).raw


class PostgresEngine:
    """PostgreSQL, a server: each statement a round trip; an index a team shares."""

    round_trips = True
    shared = True
    sparse_index = False
    snapshot_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ"

    def json_items(self, column: str, field: str) -> JsonItems:
        return JsonItems(f"jsonb_array_elements(CAST({column} AS jsonb)) e", f"e ->> '{field}'", f"{column} LIKE '[%'")

    # -- connections, transactions and locks -------------------------------------------------------

    @contextmanager
    def pipelined(self, conn: Connection) -> Iterator[None]:
        with _pg(conn).pipelined():
            yield

    def broken(self, conn: Connection) -> bool:
        return bool(_raw(conn).broken)

    def one_at_a_time(self, conn: Connection, what: str) -> None:
        """A transaction-level advisory lock on ``what`` (released at COMMIT or ROLLBACK)."""
        conn.execute("SELECT pg_advisory_xact_lock(?::int, ?::int)", (ADVISORY_NAMESPACE, advisory_key(what)))

    def exclusive(self, conn: Connection, job: str, waiting: str) -> ContextManager[None]:
        return advisory_lock(_pg(conn), job, waiting)

    def bulk_writing(self, conn: Connection) -> ContextManager[None]:
        return nullcontext()   # the server manages its own cache

    def has_table(self, conn: Connection, name: str) -> bool:
        return conn.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0] is True

    def db_file(self, conn: Connection) -> str:
        return ""   # the index is on the server, no file here

    def file_identity(self, conn: Connection) -> tuple[Any, ...] | None:
        return ("postgres", _pg(conn).target)

    # -- the catalog (export and import) ---------------------------------------------------------------

    def tables(self, conn: Connection) -> list[str]:
        return catalog.tables(_pg(conn))

    def columns(self, conn: Connection, table: str) -> list[dict[str, Any]]:
        return catalog.columns(_pg(conn), table)

    def rows(self, conn: Connection, table: str, batch: int) -> Iterator[dict[str, Any]]:
        """In the order of the id or the hidden rowid, ``batch`` rows a statement (a cursor holds every row
        it returns)."""
        names = [c["name"] for c in self.columns(conn, table)]
        order = catalog.order_column(_pg(conn), table)
        select = ", ".join(f'"{n}"' for n in names) + f', "{order}"'
        after: list[Any] = []
        while True:
            where = f' WHERE "{order}" > ?' if after else ""
            rows = conn.execute(f'SELECT {select} FROM "{table}"{where} ORDER BY "{order}" LIMIT {batch}',
                                after).fetchall()
            for row in rows:
                yield dict(zip(names, row))
            if len(rows) < batch:
                return
            after = [rows[-1][len(names)]]

    def before_import(self, conn: Connection, tables: list[str]) -> None:
        catalog.check_may_move_identities(_pg(conn), tables)

    def defer_foreign_keys(self, conn: Connection) -> None:
        catalog.defer_foreign_keys(_pg(conn))

    def foreign_key_problem(self, conn: Connection, tables: list[str]) -> str | None:
        """The id sequences continue past the imported ids first."""
        for table in tables:
            catalog.move_identities(_pg(conn), table)
        try:
            catalog.check_foreign_keys(_pg(conn))
        except IntegrityError as exc:
            return f"a row references a missing row ({exc})"
        return None

    # -- documents and vectors ----------------------------------------------------------------------

    def document_count(self, conn: Connection, exact_from: int) -> int:
        """Always exact, from the full-text totals that every write of a document's text keeps in the same
        transaction (one row, where ``count(*)`` reads an index entry per document: 2.6 ms a question at 20,000
        documents)."""
        return int(conn.execute("SELECT documents FROM text_totals WHERE id = 1").fetchone()[0])

    def vector_search(self, conn: Connection) -> dict[str, Any]:
        return pg_vectors.describe(_pg(conn))

    # -- full text ----------------------------------------------------------------------------------

    def one_read(self) -> ContextManager[None]:
        return pg.one_read()

    def tokenizer(self, conn: Connection) -> Tokenizer:
        return pg.tokenizer()   # SQLite's tokenizer on a private in-memory database, the one the index was written with

    def write_rows(self, conn: Connection, rows: list[FtsRow]) -> None:
        pg.write_rows(_raw(conn), rows)

    def delete_rows(self, conn: Connection, doc_ids: list[int]) -> None:
        pg.delete_rows(_raw(conn), doc_ids)

    def clear(self, conn: Connection) -> None:
        pg.clear(_raw(conn))

    def bodies(self, conn: Connection, doc_ids: list[int]) -> dict[int, str]:
        return dict(pg.bodies(_raw(conn), doc_ids))

    def heads(self, conn: Connection, doc_ids: list[int], max_chars: int) -> list[tuple[int, str, str, str]]:
        return list(pg.heads(_raw(conn), doc_ids, max_chars))

    def titled_texts(self, conn: Connection, every: int) -> list[tuple[str, str, str]]:
        return list(pg.titled_texts(_raw(conn), every))

    def ranked(self, conn: Connection, query: TextQuery, limit: int, weights: tuple[float, ...], tokens: int,
               max_chars: int, snippet_rows: int | None) -> list[tuple[int, float, str | None]]:
        return [(d, s, None) for d, s in pg.ranked(_raw(conn), query.terms, weights, limit)]

    def scores_of(self, conn: Connection, query: TextQuery, doc_ids: list[int],
                  weights: tuple[float, ...]) -> dict[int, float]:
        wanted = set(doc_ids)
        return {d: s for d, s in self.all_scores(conn, query, weights).items() if d in wanted}

    def all_scores(self, conn: Connection, query: TextQuery, weights: tuple[float, ...]) -> dict[int, float]:
        return dict(pg.all_scores(_raw(conn), query.terms, weights))

    def count_matching(self, conn: Connection, query: TextQuery, cap: int | None) -> int:
        return int(pg.count_matching(_raw(conn), query.terms, cap))

    def count_each(self, conn: Connection, queries: list[TextQuery], cap: int) -> list[int]:
        """The terms of one token are counted in one statement (one round trip for a question's terms)."""
        return [int(n) for n in pg.count_each(_raw(conn), [q.terms for q in queries], cap)]

    def count_found(self, conn: Connection, query: TextQuery | None, doc_ids: list[int]) -> int:
        matching = set(pg.matching(_raw(conn), query.terms)) if query else set()
        others = [d for d in doc_ids if d not in matching]   # often none: no round trip then
        return len(matching) + (len(set(pg.existing(_raw(conn), others))) if others else 0)

    def snippets(self, conn: Connection, query: TextQuery, doc_ids: list[int], tokens: int,
                 max_chars: int) -> dict[int, str | None]:
        wanted = set(doc_ids)
        return {d: None for d in pg.matching(_raw(conn), query.terms) if d in wanted}


POSTGRES = PostgresEngine()
