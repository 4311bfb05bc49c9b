"""The one connection type features and the API use: what ``sqlite3.Connection`` and
:class:`kb_indexer.store.pg.connection.PgConnection` both offer (see kb_indexer.store.engine)."""

from __future__ import annotations

from typing import Any, Iterator, Protocol


class Cursor(Protocol):
    """The result of ``execute``: rows allow ``row[0]`` and ``row["column"]`` (and ``dict(row)``)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """An open index. Autocommit: writes go through :func:`kb_indexer.store.connection.transaction`."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> Cursor: ...

    def close(self) -> None: ...


#: A result row of either engine (``sqlite3.Row`` or the PostgreSQL engine's): ``row[0]``, ``row["col"]``.
Row = Any
