"""SQLite connection: WAL, foreign keys, busy timeout, explicit transactions."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from kb_indexer.errors import BadDatabaseError, NotInitialisedError, StorageError
from kb_indexer.store.errors import BUSY_TIMEOUT_MS, SQLITE_CANTOPEN, SQLITE_READONLY, from_sqlite, sqlite_code



def _configure(conn: sqlite3.Connection) -> None:
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")


def _open(target: str, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False,
                           uri=uri)


def connect(path: Path, *, create: bool = False) -> sqlite3.Connection:
    """Open the index. Autocommit mode: writes go through :func:`transaction`.

    Unless ``create`` is true, a missing file is an error that says to run
    ``kbindex init`` (sqlite would otherwise silently create an empty file).
    An index that cannot be opened for writing (a read-only file or folder) is opened read-only
    (:func:`_read_only`): searches work, writes fail as ``read_only``.
    """
    path = Path(path)
    if not create and not path.is_file():
        raise NotInitialisedError(
            f"No kbindex database at {path}. Run `kbindex init` first (or pass --db / set KBINDEX_DB)."
        )
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = None
    try:
        conn = _open(str(path))
        if not create:
            conn = _readable(conn, path)
        _configure(conn)
        if create:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":  # pragma: no cover - e.g. a filesystem without shared memory
                raise StorageError(f"could not switch {path} to WAL mode (got {mode}); put the index on a local "
                                   "filesystem that supports shared memory")
    except sqlite3.DatabaseError as exc:
        if conn is not None:
            conn.close()

        raise (from_sqlite(exc, path) or BadDatabaseError(f"{path} is not a usable SQLite database: {exc}")) from exc
    return conn


def _readable(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """``conn`` if it can read the index, else a read-only connection that can."""
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError as exc:

        if sqlite_code(exc) not in (SQLITE_READONLY, SQLITE_CANTOPEN):
            raise
        conn.close()
        return _read_only(path, exc)


def _read_only(path: Path, cause: sqlite3.Error) -> sqlite3.Connection:
    """Open a WAL index whose file or folder cannot be written (SQLite cannot create its -shm file there).

    ``mode=ro`` first; if that cannot read either, ``immutable=1`` (no locks, no -shm), which is only
    right when no -wal file holds changes not yet in the main file, so it is used only then.
    """
    uri = path.absolute().as_uri()
    conn = None
    try:
        conn = _open(f"{uri}?mode=ro", uri=True)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError:
        if conn is not None:
            conn.close()
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise cause
    conn = _open(f"{uri}?immutable=1", uri=True)
    conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (``BEGIN IMMEDIATE``), committed on success, rolled back on any error.

    ``IMMEDIATE`` takes the write lock up front, so two processes never deadlock
    upgrading read locks; the busy timeout makes the second one wait instead of
    failing with "database is locked". Nested use becomes a savepoint.
    """
    if conn.in_transaction:
        with savepoint(conn):
            yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        _undo(conn, "ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        _undo(conn, "ROLLBACK")
        raise


def _undo(conn: sqlite3.Connection, *statements: str) -> None:
    """Roll back after an error, keeping the error that caused it.

    After some errors (SQLITE_FULL, SQLITE_IOERR, an interrupt) SQLite has already rolled the transaction
    back itself; a second ROLLBACK would fail with "cannot rollback - no transaction is active" and hide
    the real cause (e.g. a full disk), so it is skipped, and a rollback that fails anyway is not reported
    over the original error.
    """
    if not conn.in_transaction:
        return
    try:
        for statement in statements:
            conn.execute(statement)
    except sqlite3.Error:
        pass


_sp_counter = 0


@contextmanager
def savepoint(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A savepoint inside the current transaction: its writes are undone alone on error."""
    global _sp_counter
    _sp_counter += 1
    name = f"sp_{_sp_counter}"
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield conn
    except BaseException:
        _undo(conn, f"ROLLBACK TO {name}", f"RELEASE {name}")
        raise
    else:
        conn.execute(f"RELEASE {name}")


def file_identity(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
    """(path, inode, device) of the connection's index file, for caches a long-lived process keeps per index
    (None for an in-memory index, or a file that cannot be stat'ed)."""
    import os

    db_file = conn.execute("PRAGMA database_list").fetchone()[2]
    if not db_file:
        return None
    try:
        st = os.stat(db_file)
    except OSError:
        return None
    return db_file, st.st_ino, st.st_dev


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The rowid of the row the cursor's INSERT wrote (``lastrowid`` is typed optional: a cursor that
    inserted nothing has none, and that is a bug here, not a case to handle)."""
    rowid = cur.lastrowid
    if rowid is None:
        raise RuntimeError("an INSERT wrote no row")
    return rowid
