"""SQLite connection: WAL, foreign keys, busy timeout, explicit transactions."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kb_indexer.errors import KbError, NotInitialisedError

BUSY_TIMEOUT_MS = 30_000


def _configure(conn: sqlite3.Connection) -> None:
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")


def connect(path: Path, *, create: bool = False) -> sqlite3.Connection:
    """Open the index. Autocommit mode: writes go through :func:`transaction`.

    Unless ``create`` is true, a missing file is an error that says to run
    ``kbindex init`` (sqlite would otherwise silently create an empty file).
    """
    path = Path(path)
    if not create and not path.is_file():
        raise NotInitialisedError(
            f"No kbindex database at {path}. Run `kbindex init` first (or pass --db / set KBINDEX_DB)."
        )
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        _configure(conn)
        if create:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":  # pragma: no cover - e.g. a filesystem without shared memory
                raise KbError(f"could not switch {path} to WAL mode (got {mode})")
    except sqlite3.DatabaseError as exc:
        raise KbError(f"{path} is not a usable SQLite database: {exc}", code="bad_database") from exc
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
