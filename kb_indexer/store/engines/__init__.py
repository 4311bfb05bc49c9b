"""The storage engines behind an index: what differs between SQLite and PostgreSQL, as one typed object.

Every connection has one engine, fixed by the connection's type when it is made: an ``sqlite3.Connection``
is SQLite's (:mod:`kb_indexer.store.engines.sqlite`), a :class:`kb_indexer.store.pg.connection.PgConnection`
PostgreSQL's (:mod:`kb_indexer.store.engines.postgres`, imported with psycopg, never on SQLite's path).
:func:`engine_of` returns it (``sqlite3.Connection`` is a C type that takes no attribute, so the engine is
found by type rather than carried; the PostgreSQL engine module imports the connection module, not the
other way round, so the PostgreSQL modules never import the engine layer). Store modules call the engine
instead of asking which engine they run on; features reach what an engine can do through store functions
(only ``store/`` imports this package).

The engine holds no state of its own per connection: each method takes the connection it works on.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, ContextManager, Iterator, Protocol

from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engines.shapes import FtsRow, JsonItems, TextQuery
from kb_indexer.store.engines.sqlite import SQLITE

if TYPE_CHECKING:
    from kb_indexer.store.fts_tokens import Tokenizer

__all__ = ["Engine", "FtsRow", "JsonItems", "TextQuery", "engine_of"]


class Engine(Protocol):
    """What differs between the engines. Full text: see :mod:`kb_indexer.store.fulltext` (the public API,
    which calls these); each method takes the connection it works on."""

    #: Each statement is a round trip to a server (worth sending look-ups in batches, not worth a probe).
    @property
    def round_trips(self) -> bool: ...

    #: An index on a server that several people share (its files may be on another machine; a team).
    @property
    def shared(self) -> bool: ...

    #: SQLite keeps a sparse index beside FTS5 (:mod:`kb_indexer.store.sparse`); PostgreSQL's own postings
    #: rank every match.
    @property
    def sparse_index(self) -> bool: ...

    #: The statement that starts a read transaction whose reads all see one state of the index.
    @property
    def snapshot_begin(self) -> str: ...

    def json_items(self, column: str, field: str) -> JsonItems: ...

    # -- connections, transactions and locks -------------------------------------------------------

    def pipelined(self, conn: Connection) -> ContextManager[None]: ...

    def broken(self, conn: Connection) -> bool: ...

    def one_at_a_time(self, conn: Connection, what: str) -> None: ...

    def exclusive(self, conn: Connection, job: str, waiting: str) -> ContextManager[None]: ...

    def bulk_writing(self, conn: Connection) -> ContextManager[None]: ...

    def has_table(self, conn: Connection, name: str) -> bool: ...

    def db_file(self, conn: Connection) -> str: ...

    # -- the catalog (export and import) ---------------------------------------------------------------

    def tables(self, conn: Connection) -> list[str]: ...

    def columns(self, conn: Connection, table: str) -> list[dict[str, Any]]: ...

    def rows(self, conn: Connection, table: str, batch: int) -> Iterator[dict[str, Any]]: ...

    def before_import(self, conn: Connection, tables: list[str]) -> None: ...

    def defer_foreign_keys(self, conn: Connection) -> None: ...

    def foreign_key_problem(self, conn: Connection, tables: list[str]) -> str | None: ...

    # -- documents and vectors ---------------------------------------------------------------------

    def document_count(self, conn: Connection, exact_from: int) -> int: ...

    def vector_search(self, conn: Connection) -> dict[str, Any]: ...

    def file_identity(self, conn: Connection) -> tuple[Any, ...] | None: ...

    # -- full text --------------------------------------------------------------------------------

    def one_read(self) -> ContextManager[None]: ...

    def tokenizer(self, conn: Connection) -> Tokenizer: ...

    def write_rows(self, conn: Connection, rows: list[FtsRow]) -> None: ...

    def delete_rows(self, conn: Connection, doc_ids: list[int]) -> None: ...

    def clear(self, conn: Connection) -> None: ...

    def bodies(self, conn: Connection, doc_ids: list[int]) -> dict[int, str]: ...

    def heads(self, conn: Connection, doc_ids: list[int], max_chars: int) -> list[tuple[int, str, str, str]]: ...

    def titled_texts(self, conn: Connection, every: int) -> list[tuple[str, str, str]]: ...

    def ranked(self, conn: Connection, query: TextQuery, limit: int, weights: tuple[float, ...], tokens: int,
               max_chars: int, snippet_rows: int | None) -> list[tuple[int, float, str | None]]: ...

    def scores_of(self, conn: Connection, query: TextQuery, doc_ids: list[int],
                  weights: tuple[float, ...]) -> dict[int, float]: ...

    def all_scores(self, conn: Connection, query: TextQuery, weights: tuple[float, ...]) -> dict[int, float]: ...

    def count_matching(self, conn: Connection, query: TextQuery, cap: int | None) -> int: ...

    def count_each(self, conn: Connection, queries: list[TextQuery], cap: int) -> list[int]: ...

    def count_found(self, conn: Connection, query: TextQuery | None, doc_ids: list[int]) -> int: ...

    def snippets(self, conn: Connection, query: TextQuery, doc_ids: list[int], tokens: int,
                 max_chars: int) -> dict[int, str | None]: ...


def engine_of(conn: Connection) -> Engine:
    """The engine of ``conn``: SQLite's for an ``sqlite3.Connection``, PostgreSQL's for a ``PgConnection``."""
    if isinstance(conn, sqlite3.Connection):
        return SQLITE
    # lazy: psycopg, only for a connection that is not SQLite's
    from kb_indexer.store.engines.postgres import POSTGRES, PgConnection

    if isinstance(conn, PgConnection):
        return POSTGRES
    raise TypeError(f"not an index connection: {type(conn).__name__}")
