"""Which database engine an index lives in: SQLite (a file, the embedded default) or PostgreSQL (a URL).

``--db`` / ``KBINDEX_DB`` name either a file path or a ``postgresql://`` URL. A PostgreSQL connection is a
:class:`kb_indexer.store.pg.connection.PgConnection`: it speaks the same SQL the features write (SQLite's
dialect, translated) and carries ``engine = "postgres"`` and ``raw`` (the psycopg connection, for the
engine-specific store modules in :mod:`kb_indexer.store.pg`). What differs between the engines is the
connection's engine (:mod:`kb_indexer.store.engines`); features never ask which engine they run on, and the
store modules that still do through :func:`is_postgres` are counted down by a test.
"""

from __future__ import annotations

import zlib

__all__ = ["ADVISORY_NAMESPACE", "advisory_key", "is_postgres"]

#: The first key of every kbindex advisory lock on PostgreSQL ("kbix"); the second names what is locked.
ADVISORY_NAMESPACE = 0x6B626978


def advisory_key(name: str) -> int:
    """The second key of the advisory lock on ``name`` (a job, a question): a fixed 31-bit number, the same on
    every host and Python."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def is_postgres(conn: object) -> bool:
    """True for a connection to PostgreSQL (a ``PgConnection``), false for ``sqlite3.Connection``."""
    return getattr(conn, "engine", None) == "postgres"
