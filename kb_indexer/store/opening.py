"""Opening an index: creating it (or upgrading it) with ``init``, and opening an initialised one, upgraded in
place when it is older than this kbindex (the migrations themselves: :mod:`kb_indexer.store.migrations`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

from kb_indexer.config import DbTarget, DbUrl
from kb_indexer.errors import BadDatabaseError, NotInitialisedError
from kb_indexer.store import meta
from kb_indexer.store.connection import connect, transaction
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.foreign import foreign_message as _foreign_message
from kb_indexer.store.foreign import foreign_tables
from kb_indexer.store import migrations as schema   # its names read when used (tests shorten MIGRATIONS)
from kb_indexer.store.registry import refuse_newer


def init_db(path: DbTarget, kb_root: Path, *, force: bool = False) -> tuple[Connection, list[str]]:
    """Create the index (or upgrade it). Another application's SQLite file is refused (bad_database) before
    anything in it changes, unless ``force``. A URL: the schema on that PostgreSQL server."""
    if isinstance(path, DbUrl):
        conn: Connection = connect(path)
        done = schema._pg().init_db(conn, force)
    else:
        conn, done = _init_sqlite(path, force)
    with transaction(conn):
        meta.put(conn, "kb_root", str(kb_root))
    return conn, done


def _init_sqlite(path: Path, force: bool) -> tuple[Connection, list[str]]:
    tables = foreign_tables(path)
    if tables and not force:
        raise BadDatabaseError(_foreign_message(path, tables))
    conn = connect(path, create=True)
    return conn, schema.migrate(conn)


def open_db(path: DbTarget, check: Callable[[Connection], None] | None = None, read_only: bool = False) -> Connection:
    """Open an initialised index, upgrading it in place if it is older than this kbindex (``read_only``: never,
    nothing is written through it: see :func:`connect`). ``check`` (SQLite) runs first, on the index as it is:
    what it raises refuses the index before anything is written."""
    if isinstance(path, DbUrl):
        conn = connect(path, read_only=read_only)   # first: without psycopg (the postgres extra) says what to install
        return schema._pg().open_db(conn)  # type: ignore[no-any-return]
    conn = connect(path, read_only=read_only)
    try:
        applied = schema._applied(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise BadDatabaseError(f"{path} is not a usable SQLite database: {exc}") from exc
    if applied is None:
        conn.close()
        tables = foreign_tables(path)
        if tables:
            raise BadDatabaseError(_foreign_message(path, tables))
        raise NotInitialisedError(f"{path} is not a kbindex database. Run `kbindex init` first.")
    refuse_newer(applied, schema.MIGRATIONS)
    if check is not None:
        try:
            check(conn)
        except BaseException:
            conn.close()
            raise
    if len(applied) < len(schema.MIGRATIONS):
        schema.migrate(conn)
    return conn


def index_exists(path: DbTarget) -> bool:
    """Whether the index is there already: a file; on a server, whether kbindex's schema is."""
    if not isinstance(path, DbUrl):
        return path.is_file()
    try:
        open_db(path).close()
    except NotInitialisedError:
        return False
    return True
