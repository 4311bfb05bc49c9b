"""Server-side locks of the PostgreSQL engine: long jobs (migrations, ``sync``, ``learn``) take an advisory
lock, so two of the same job never interleave, from any host; short writes (feedback, relate, query
recording) take none and never wait behind them."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from kb_indexer.store.engine import ADVISORY_NAMESPACE as _NAMESPACE, advisory_key as job_key
from kb_indexer.store.pg.connection import PgConnection


@contextmanager
def advisory_lock(conn: PgConnection, job: str) -> Iterator[None]:
    """Hold the job's session-level advisory lock (waiting for another holder) while the block runs."""
    conn.execute("SELECT pg_advisory_lock(?::int, ?::int)", (_NAMESPACE, job_key(job)))
    try:
        yield
    finally:
        if not conn.raw.closed:
            conn.execute("SELECT pg_advisory_unlock(?::int, ?::int)", (_NAMESPACE, job_key(job)))
