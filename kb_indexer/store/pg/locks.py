"""Server-side locks of the PostgreSQL engine: long jobs (migrations, ``sync``, ``learn``) take an advisory
lock, so two of the same job never interleave, from any host; short writes (feedback, relate, query
recording) take none and never wait behind them. A lock another session holds is waited for up to the busy
timeout (the session's ``lock_timeout``, :func:`kb_indexer.store.pg.connection.session_options`), then the
job fails as ``busy`` with nothing written."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from kb_indexer.notices import warn
from kb_indexer.store.engine import ADVISORY_NAMESPACE as _NAMESPACE, advisory_key as job_key
from kb_indexer.store.errors import LOCK_NOT_AVAILABLE, PgError, busy_error, busy_timeout_ms
from kb_indexer.store.pg.connection import PgConnection


@contextmanager
def advisory_lock(conn: PgConnection, job: str, waiting: str) -> Iterator[None]:
    """Hold the job's session-level advisory lock while the block runs. When another session holds it,
    ``waiting`` (what the holder is doing) is said on stderr and the lock waited for, up to the busy timeout."""
    key = (_NAMESPACE, job_key(job))
    if not conn.execute("SELECT pg_try_advisory_lock(?::int, ?::int)", key).fetchone()[0]:
        warn(f"{waiting}: waiting for it (up to {busy_timeout_ms() / 1000:g} s)")
        try:
            conn.execute("SELECT pg_advisory_lock(?::int, ?::int)", key)
        except PgError as exc:
            if exc.sqlstate != LOCK_NOT_AVAILABLE:
                raise
            raise busy_error(conn.target, f"the index's {job} lock", exc) from exc
    try:
        yield
    finally:
        if not conn.raw.closed:
            conn.execute("SELECT pg_advisory_unlock(?::int, ?::int)", key)
