"""Ctrl-C during a long SQLite statement.

Python runs its SIGINT handler only between bytecodes, so a statement running in SQLite's C code cannot be
interrupted by itself. A progress handler calls back into Python every ``_EVERY`` virtual-machine steps:
the pending KeyboardInterrupt is raised there, SQLite aborts the statement ("interrupted"), and
:func:`interruptible` turns that back into the KeyboardInterrupt the user asked for.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator
from kb_indexer.store.dbapi import Connection

_EVERY = 50_000  # SQLite VM steps between checks (well under a millisecond)


def _tick() -> int:
    return 0


@contextmanager
def interruptible(conn: Connection) -> Iterator[None]:
    if not isinstance(conn, sqlite3.Connection):  # PostgreSQL: psycopg cancels the running statement on Ctrl-C itself
        yield
        return
    conn.set_progress_handler(_tick, _EVERY)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if str(exc) == "interrupted":
            raise KeyboardInterrupt from None
        raise
    finally:
        conn.set_progress_handler(None, 0)
