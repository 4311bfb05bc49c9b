"""Opening an index (SQLite: WAL, foreign keys, busy timeout; PostgreSQL: kb_indexer.store.pg) and the
explicit transactions both engines share."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

from kb_indexer.config import DbTarget, DbUrl
from kb_indexer.errors import BadDatabaseError, KbError, NotInitialisedError, StorageError
from kb_indexer.store import team
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engines import JsonItems, engine_of
from kb_indexer.store.engines.sqlite import db_file as db_file
from kb_indexer.store.errors import (SQLITE_CANTOPEN, SQLITE_READONLY, DatabaseError, PgError, busy_timeout_ms,
                                     from_postgres, from_sqlite, sqlite_code)



def _configure(conn: sqlite3.Connection) -> None:
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms()}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    team.register(conn)   # kb_asker()


def _open(target: str, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(target, timeout=busy_timeout_ms() / 1000, isolation_level=None, check_same_thread=False,
                           uri=uri)


def connect(path: DbTarget, *, create: bool = False, read_only: bool = False) -> Connection:
    """Open the index. Autocommit mode: writes go through :func:`transaction`.

    A :class:`DbUrl` opens the PostgreSQL server it names (psycopg is imported only then).
    Unless ``create`` is true, a missing file is an error that says to run
    ``kbindex init`` (sqlite would otherwise silently create an empty file).
    An index that cannot be opened for writing (a read-only file or folder) is opened read-only
    (:func:`_read_only`): searches work, writes fail as ``read_only``. So is every index with ``read_only``
    (SQLite's ``mode=ro``; on PostgreSQL every transaction of the connection is read-only).
    """
    if isinstance(path, DbUrl):
        return _connect_postgres(path, read_only)
    path = Path(path)
    if not create and not path.is_file():
        raise NotInitialisedError(
            f"No kbindex database at {path}. Run `kbindex init` first (or pass --db / set KBINDEX_DB)."
        )
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = None
    try:
        conn = _read_only(path) if read_only else _open(str(path))
        if not create and not read_only:
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


def _connect_postgres(url: DbUrl, read_only: bool = False) -> Connection:
    try:
        # lazy: psycopg (the optional postgres extra) is imported only for a PostgreSQL index
        from kb_indexer.store.pg.connection import PgConnection
    except ImportError as exc:
        raise KbError(f"{url} is a PostgreSQL server, and the PostgreSQL engine needs psycopg: "
                      "pip install 'kbindex[postgres]'", code="missing_extra") from exc
    try:
        return PgConnection.connect(url, read_only=read_only, on_behalf=team.behalf())
    except PgError as exc:
        raise (from_postgres(exc, url) or StorageError(f"Cannot open {url}: {exc}")) from exc


@contextmanager
def pooling(target: DbTarget) -> Iterator[None]:
    """For a long-lived process (the MCP server, chat): while the block runs, :func:`connect` takes
    PostgreSQL connections of ``target`` from a small pool (:mod:`kb_indexer.store.pg.pool`) and ``close()``
    gives them back. An SQLite file is opened per request as before (a local file costs no round trip)."""
    if not isinstance(target, DbUrl):
        yield
        return
    try:
        from kb_indexer.store.pg.pool import pooled  # lazy: psycopg_pool, only on the PostgreSQL engine
    except ImportError as exc:
        raise KbError(f"{target} is a PostgreSQL server, and the PostgreSQL engine needs psycopg and "
                      "psycopg_pool: pip install 'kbindex[postgres]'", code="missing_extra") from exc
    with pooled(target):
        yield


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


def _read_only(path: Path, cause: sqlite3.Error | None = None) -> sqlite3.Connection:
    """Open a WAL index read-only: one whose file or folder cannot be written (SQLite cannot create its -shm
    file there; ``cause``: what opening it for writing said), or any index opened ``read_only``.

    ``mode=ro`` first; if that cannot read either, ``immutable=1`` (no locks, no -shm), which is only
    right when no -wal file holds changes not yet in the main file, so it is used only then.
    """
    uri = path.absolute().as_uri()
    conn = None
    try:
        conn = _open(f"{uri}?mode=ro", uri=True)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError as exc:
        if conn is not None:
            conn.close()
        cause = cause or exc
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise cause
    conn = _open(f"{uri}?immutable=1", uri=True)
    conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    return conn


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """One write transaction (``BEGIN IMMEDIATE``), committed on success, rolled back on any error.

    ``IMMEDIATE`` takes the write lock up front, so two processes never deadlock
    upgrading read locks; the busy timeout makes the second one wait instead of
    failing with "database is locked". Nested use becomes a savepoint. (PostgreSQL locks rows, not the
    database: its translation of ``BEGIN IMMEDIATE`` is ``BEGIN``.)
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


@contextmanager
def rolled_back(conn: Connection) -> Iterator[Connection]:
    """A write transaction that is always rolled back: a preview computed on the real index, nothing kept."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        _undo(conn, "ROLLBACK")


@contextmanager
def read_snapshot(conn: Connection) -> Iterator[Connection]:
    """The block's reads see one state of the index, however long they take (a read transaction; on
    PostgreSQL repeatable read): an export of a million rows is of one moment. Writers are not held up.
    Inside the caller's transaction: that transaction's view."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute(engine_of(conn).snapshot_begin)
    try:
        yield conn
    finally:
        _undo(conn, "ROLLBACK")   # nothing was written


@contextmanager
def together(conn: Connection, write: bool = False) -> Iterator[Connection]:
    """The block's statements sent together on PostgreSQL outside a transaction: one round trip, their results
    read after the block (SQLite: run one by one, as always). ``write``: the block is one write transaction
    as :func:`transaction` (``BEGIN`` and ``COMMIT`` sent with the statements; rolled back on an error, which
    comes at the end of the block at the latest); inside the caller's transaction it is a savepoint."""
    engine = engine_of(conn)
    if not engine.round_trips or conn.in_transaction:
        with transaction(conn) if write else nullcontext(conn):
            yield conn
        return
    try:
        with engine.pipelined(conn):
            if write:
                conn.execute("BEGIN")
            yield conn
            if write:
                conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction and not engine.broken(conn):
            conn.execute("ROLLBACK")   # an error inside the pipeline leaves its transaction open
        raise


def round_trips(conn: Connection) -> bool:
    """Whether each statement on ``conn`` is a round trip to a server (PostgreSQL): look-ups are then worth
    sending in batches, and a cheap probe that saves work on a local file is not worth making."""
    return engine_of(conn).round_trips


def json_items(conn: Connection, column: str, field: str) -> JsonItems:
    """The SQL that reads ``field`` of each object of the JSON array in the text ``column``, in ``conn``'s
    dialect: join ``source``, select ``value``, keep the rows where ``valid``."""
    return engine_of(conn).json_items(column, field)


def one_at_a_time(conn: Connection, what: str) -> None:
    """Inside a write transaction: transactions about the same ``what`` (e.g. one question's get-or-create)
    run one after another, so a row looked up and then inserted is inserted once. SQLite's ``BEGIN
    IMMEDIATE`` already lets one writer in at a time; PostgreSQL takes a transaction-level advisory lock on
    ``what`` (released at COMMIT or ROLLBACK; other writers and long jobs' locks are not waited for)."""
    engine_of(conn).one_at_a_time(conn, what)


def _undo(conn: Connection, *statements: str) -> None:
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
    except DatabaseError:
        pass


_sp_counter = 0


@contextmanager
def savepoint(conn: Connection) -> Iterator[Connection]:
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


@contextmanager
def exclusive(conn: Connection, job: str) -> Iterator[None]:
    """Run a long job (``sync``, ``learn``) alone: on PostgreSQL under the job's advisory lock, so two
    processes on any hosts never interleave it; on SQLite under a lock on ``<index>-<job>.lock`` beside the
    index (two syncs read the same starting state and both re-indexed what either added: the second now waits
    for the first, saying so on stderr, and finds it done). Both engines wait up to the busy timeout, then fail
    as ``busy`` (a stuck holder does not keep every later job waiting). A folder where no lock file can be made
    (read-only: the job fails at its first write anyway), or a system without ``fcntl``, runs the job unlocked."""
    with engine_of(conn).exclusive(conn, job, f"another kbindex {job} of this index is running"):
        yield


@contextmanager
def bulk_writing(conn: Connection) -> Iterator[None]:
    """A larger page cache while the block writes many rows (SQLite; the server manages its own)."""
    with engine_of(conn).bulk_writing(conn):
        yield


def checkpoint(conn: Connection) -> None:
    """After a batch's commit: a passive WAL checkpoint, so the -wal file stays small (SQLite only)."""
    if isinstance(conn, sqlite3.Connection):
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")


def has_table(conn: Connection, name: str) -> bool:
    """Whether the index has the table ``name`` (an older index may lack one a newer kbindex added)."""
    return engine_of(conn).has_table(conn, name)


def file_identity(conn: Connection) -> tuple[Any, ...] | None:
    """(path, inode, device) of the connection's index file, for caches a long-lived process keeps per index
    (None for an in-memory index, or a file that cannot be stat'ed; the server for PostgreSQL)."""
    return engine_of(conn).file_identity(conn)


def inserted_id(cur: Any) -> int:
    """The id of the row the cursor's ``INSERT ... RETURNING id`` wrote (both engines; SQLite >= 3.35).
    A cursor that inserted nothing is a bug here, not a case to handle."""
    rows = cur.fetchall()  # to the end: SQLite finishes the statement, so the transaction can commit
    if not rows:
        raise RuntimeError("an INSERT wrote no row")
    return int(rows[0][0])


def plain_rows(conn: Connection, sql: str, parameters: Any = ()) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql`` as plain tuples (a sync reads 100,000 of them: no per-row name lookup on SQLite)."""
    if isinstance(conn, sqlite3.Connection):
        cur = conn.cursor()
        cur.row_factory = None
        return iter(cur.execute(sql, parameters))
    return iter(conn.execute(sql, parameters))


def plain_all(conn: Connection, sql: str, parameters: Any = ()) -> list[tuple[Any, ...]]:
    """Every row of ``sql`` as plain tuples, fetched in one call (a query's tagged documents: tens of thousands
    of rows, where a ``sqlite3.Row`` each costs; iterating a psycopg cursor costs per row)."""
    if isinstance(conn, sqlite3.Connection):
        cur = conn.cursor()
        cur.row_factory = None
        return cur.execute(sql, parameters).fetchall()
    return list(conn.execute(sql, parameters).fetchall())

