"""The one place where failures of SQLite, PostgreSQL and the file system become documented error codes.

Used by :func:`kb_indexer.store.connection.connect` and ``transaction``, by every public method of
:class:`kb_indexer.api.KnowledgeBase` (through :func:`translating`) and by the CLI's top-level handler, so
a locked, read-only, full or damaged index is reported the same way everywhere (codes: docs/agents.md, "Errors").

Anything not mapped here is a bug in kbindex and is reported as ``internal``.
"""

from __future__ import annotations

import errno
import functools
import math
import os
import sqlite3
from typing import Any, Callable, Iterator, TypeVar

from kb_indexer import settings
from kb_indexer.errors import (BadDatabaseError, BusyError, DbUnavailableError, DiskFullError, KbError,
                               ReadOnlyError, StorageError, ValidationError)
from kb_indexer.notices import warn

class PgError(Exception):
    """A PostgreSQL failure, as :class:`kb_indexer.store.pg.connection.PgConnection` raises it (psycopg's
    error is its ``__cause__``; ``sqlstate`` its SQLSTATE code). Defined here so that catching it needs no
    psycopg."""

    def __init__(self, message: str, sqlstate: str | None = None):
        super().__init__(message)
        self.sqlstate = sqlstate


class PgIntegrityError(PgError):
    """A constraint (unique, foreign key, check, not null) refused a write."""


class PgOperationalError(PgError):
    """The server could not run the statement (connection, lock, resources, cancel)."""


#: What features catch, whichever engine the index is on (``except DatabaseError:``).
DatabaseError = (sqlite3.DatabaseError, PgError)
IntegrityError = (sqlite3.IntegrityError, PgIntegrityError)
OperationalError = (sqlite3.OperationalError, PgOperationalError)

#: SQLSTATE of a statement the role may not run (``permission denied for table ...``): a member's role that may
#: read the index but not write it, or not change its schema.
INSUFFICIENT_PRIVILEGE = "42501"
#: SQLSTATEs of a statement that may not write here (a read-only transaction, a role's missing privilege):
#: operational (a query still answers, its history row lost) and ``read_only``.
READ_ONLY_TRANSACTION = "25006"
READ_ONLY_STATES = (READ_ONLY_TRANSACTION, INSUFFICIENT_PRIVILEGE)

#: How long a command waits for a lock another process holds before it answers ``busy`` (nothing written):
#: SQLite's busy timeout and a job's lock file beside the index; PostgreSQL's ``lock_timeout``, which holds for
#: rows, tables and the jobs' advisory locks alike. ``KBINDEX_BUSY_TIMEOUT`` (seconds) sets another.
BUSY_TIMEOUT_MS = 30_000
BUSY_TIMEOUT_ENV = "KBINDEX_BUSY_TIMEOUT"
#: PostgreSQL's largest ``lock_timeout`` (milliseconds, a 32-bit integer).
_MAX_TIMEOUT_MS = 2**31 - 1
#: SQLSTATE of a lock not granted within ``lock_timeout``.
LOCK_NOT_AVAILABLE = "55P03"
_WARNED: set[str] = set()   # the bad values of KBINDEX_BUSY_TIMEOUT already warned about (once each)


def busy_timeout_ms() -> int:
    """The busy timeout in milliseconds: ``KBINDEX_BUSY_TIMEOUT`` seconds when set (a fraction is fine), else
    :data:`BUSY_TIMEOUT_MS`. A value that is not a positive number of seconds is warned about and not used."""
    configured = settings.text(BUSY_TIMEOUT_ENV)
    if not configured:
        return BUSY_TIMEOUT_MS
    try:
        seconds = float(configured)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds * 1000 <= _MAX_TIMEOUT_MS:
        if configured not in _WARNED:
            _WARNED.add(configured)
            warn(f"{BUSY_TIMEOUT_ENV}={configured!r} is not a positive number of seconds (at most "
                 f"{_MAX_TIMEOUT_MS // 1000:,}); using {BUSY_TIMEOUT_MS // 1000}")
        return BUSY_TIMEOUT_MS
    return max(1, round(seconds * 1000))


def busy_error(where: object = None, held: str = "its write lock", cause: object = None) -> BusyError:
    """``busy``: another process held ``held`` past the busy timeout; nothing was written (both engines, and a
    job's lock). ``cause``: the server's error (PostgreSQL), its first line quoted."""
    at_start = _where(where)
    at_start = at_start[0].upper() + at_start[1:]
    because = f" ({str(cause).splitlines()[0]})" if cause else ""
    look = " (how to find one on the server: docs/teams.md, Locks)" if cause else ""
    return BusyError(
        f"{at_start} is busy: another kbindex process held {held} for more than {busy_timeout_ms() / 1000:g} s"
        f"{because}, so nothing was written. Run the command again; if this keeps happening, look for a "
        f"long-running or stuck kbindex process using this index{look}.")

# Primary SQLite result codes (the low byte of an extended code).
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR = 5, 6, 8, 10
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_NOTADB = 11, 13, 14, 26

# For errors raised without a result code (older Python, or re-raised by a library): the message decides.
_BY_MESSAGE = (
    ("database is locked", SQLITE_BUSY),
    ("database table is locked", SQLITE_LOCKED),
    ("readonly database", SQLITE_READONLY),
    ("database or disk is full", SQLITE_FULL),
    ("disk i/o error", SQLITE_IOERR),
    ("database disk image is malformed", SQLITE_CORRUPT),
    ("file is not a database", SQLITE_NOTADB),
    ("unable to open database file", SQLITE_CANTOPEN),
)


def sqlite_code(exc: sqlite3.Error) -> int | None:
    """The primary SQLite result code of ``exc`` (None when it carries none and its message is unknown)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code > 0:
        return code & 0xFF
    text = str(exc).lower()
    for fragment, primary in _BY_MESSAGE:
        if fragment in text:
            return primary
    return None


def _where(path: object) -> str:
    return f"the index {path}" if path else "the index"


def from_sqlite(exc: sqlite3.Error, path: object = None) -> KbError | None:
    """The documented error for a SQLite failure, or None if it is not one a user can act on (a bug)."""
    code, where = sqlite_code(exc), _where(path)
    at_start = where[0].upper() + where[1:]
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return busy_error(path)
    if code == SQLITE_READONLY:
        return ReadOnlyError(
            f"{at_start} cannot be written: the file, its folder or the filesystem is read-only ({exc}). "
            "Nothing was written. Searches still work; to write, make the index file, its -wal/-shm files "
            "and its folder writable (e.g. chmod u+w), or work on a copy.")
    if code == SQLITE_FULL:
        return DiskFullError(
            f"The disk holding {where} is full (or a quota or size limit was reached): {exc}. "
            "Nothing was written (the transaction was rolled back). Free some space and run the command again.")
    if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
        return BadDatabaseError(
            f"{at_start} is damaged or is not a kbindex database ({exc}). Restore it from a backup or an export "
            "(`kbindex import`), or create a new one with `kbindex init --db NEW_FILE`.")
    if code == SQLITE_CANTOPEN:
        return ReadOnlyError(
            f"{at_start} cannot be opened for writing ({exc}). Check that it is a file you may write and that "
            "its folder is writable (SQLite creates -wal/-shm files beside it), or work on a copy.")
    if code == SQLITE_IOERR:
        return StorageError(f"Reading or writing {where} failed: {exc} (a disk or filesystem error). "
                            "Check the disk; the last transaction was rolled back.")
    return None


def from_postgres(exc: PgError, where_: object = None) -> KbError | None:
    """The documented error for a PostgreSQL failure (by SQLSTATE class), or None for a bug."""
    state, where = exc.sqlstate or "", _where(where_)
    at_start = where[0].upper() + where[1:]
    if state == LOCK_NOT_AVAILABLE:
        return busy_error(where_, "a lock this command needs", exc)
    if state in ("40P01", "57014", "40001"):
        return BusyError(f"{at_start} is busy ({exc}): nothing was written. Run the command again.")
    if state == READ_ONLY_TRANSACTION:
        return ReadOnlyError(f"{at_start} is read-only here ({exc}): nothing was written. Searches still work.")
    if state == INSUFFICIENT_PRIVILEGE:
        return ReadOnlyError(f"This database role is not allowed this on {where} ({exc}): nothing was written. "
                             "Searching needs SELECT on the index's tables, writing INSERT, UPDATE and DELETE too "
                             "(docs/teams.md, Roles).")
    if state in ("53100", "53200"):
        return DiskFullError(f"The PostgreSQL server of {where} is out of disk or memory ({exc}). Nothing was "
                             "written.")
    if state.startswith(("08", "28", "3D", "57P")) or not state:
        return DbUnavailableError(f"Cannot reach or use {where}: {exc}. Check the server, the URL and the credentials.")
    return None


def from_os_error(exc: OSError) -> KbError | None:
    name = f" {exc.filename}" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return DiskFullError(f"The disk is full (or a quota was reached) writing{name}. Free some space and "
                             "run the command again.")
    if exc.errno == errno.EROFS:
        return ReadOnlyError(f"Cannot write{name}: the filesystem is read-only.")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ReadOnlyError(f"Permission denied:{name or ' a file kbindex needs'}. Check its permissions.")
    if exc.errno == errno.EIO:
        return StorageError(f"Reading or writing{name} failed: {exc.strerror} (a disk or filesystem error).")
    if exc.errno == errno.ENAMETOOLONG:  # a user-given path: named by its last part (not the whole, cwd and all)
        last = os.path.basename(os.fsdecode(exc.filename or "").rstrip("/"))
        shown = f" {last[:60]}..." if len(last) > 60 else f" {last}" if last else ""
        return ValidationError(f"A file name is too long for the file system:{shown}")
    return None


def translate(exc: BaseException, path: object = None) -> KbError | None:
    """The documented :class:`KbError` for ``exc`` (itself if it already is one); None means a bug."""
    if isinstance(exc, KbError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return from_sqlite(exc, path)
    if isinstance(exc, PgError):
        return from_postgres(exc, path)
    raw = _from_psycopg(exc)
    if raw is not None:
        return from_postgres(raw, path)
    if isinstance(exc, OSError):
        return from_os_error(exc)
    if isinstance(exc, UnicodeEncodeError) and "surrogate" in str(exc):
        # Text that is not valid Unicode (e.g. an argument with bytes that are not UTF-8) reached storage.
        return ValidationError("An argument or value is not valid UTF-8 text; pass it as UTF-8.")
    return None


def _from_psycopg(exc: BaseException) -> PgError | None:
    """psycopg's own error (a statement run on the raw connection, in PostgreSQL's dialect) as kbindex's, when the
    server answered it (a SQLSTATE) or the connection failed; None otherwise (a misused API is a bug). Told
    without importing psycopg, which SQLite's engine never loads."""
    kinds = {k.__name__ for k in type(exc).__mro__ if k.__module__.partition(".")[0] == "psycopg"}
    state = getattr(exc, "sqlstate", None)
    if "Error" not in kinds or not (state or "OperationalError" in kinds):
        return None
    return PgError(str(exc).strip(), state)


def translating(cls: type) -> type:
    """Class decorator: every public method (its bases' too) raises documented errors only, naming the
    instance's ``db_path`` when it has one."""
    names = {name for klass in cls.__mro__[:-1] for name in vars(klass) if not name.startswith("_")}
    for name in names:
        attr = next(vars(k)[name] for k in cls.__mro__ if name in vars(k))  # the one lookup finds
        if isinstance(attr, (classmethod, staticmethod)):
            setattr(cls, name, type(attr)(_wrap(attr.__func__)))
        elif callable(attr):
            setattr(cls, name, _wrap(attr))
    return cls


def _wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(fn, "_kb_translating", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KbError:
            raise
        except Exception as exc:   # what translate does not know (a bug) goes on as it is
            path = getattr(args[0], "db_path", None) if args else None
            mapped = translate(exc, path)
            if mapped is None:
                raise
            raise mapped from exc

    wrapper._kb_translating = True  # type: ignore[attr-defined]
    return wrapper


_T = TypeVar("_T")


def translated_items(items: Iterator[_T], path: Any = None) -> Iterator[_T]:
    """``items`` (rows read as they are used, after the method that returned them has returned) raising
    documented errors only, as :func:`translating`'s methods do."""
    try:
        yield from items
    except KbError:
        raise
    except Exception as exc:   # what translate does not know (a bug) goes on as it is
        mapped = translate(exc, path)
        if mapped is None:
            raise
        raise mapped from exc
