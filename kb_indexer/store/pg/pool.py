"""A small pool of server connections for long-lived processes on the PostgreSQL engine (the MCP server,
chat), so a request takes an open connection instead of opening one (a TCP and authentication round trip)
and the server never holds more than ``MAX_SIZE`` connections of the process however many requests run.

psycopg_pool's ``ConnectionPool``: every connection is checked when it is taken (a lost one is replaced),
and given back idle: an open transaction is rolled back, advisory locks left by a failed job are released, a
read-only borrower's setting is undone, and so is the name a borrower asked on behalf of.
One pool per server URL while :func:`pooled` runs; ``PgConnection.connect`` then lends a connection of it
(:func:`_lend`), whose ``close()`` gives it back.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Iterator

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from kb_indexer.config import DbUrl, redact_message
from kb_indexer.store.errors import PgOperationalError
from kb_indexer.store.pg.connection import CONNECT_TIMEOUT_S, LENDERS, PgConnection, configure, connect_kwargs

MIN_SIZE = 1
MAX_SIZE = 8
#: How long a request waits for a free connection when all ``MAX_SIZE`` are in use (seconds).
CHECKOUT_TIMEOUT_S = 30.0


def _reset(raw: psycopg.Connection[Any]) -> None:
    """A connection given back: its advisory locks released, its transactions writable again (a read-only
    borrower's, :meth:`PgConnection.connect`), asking on no one's behalf (a service's borrower's), in one
    round trip."""
    raw.execute("SELECT pg_advisory_unlock_all(), set_config('kbindex.on_behalf', '', false); "
                "RESET default_transaction_read_only")


@contextmanager
def pooled(target: DbUrl) -> Iterator[None]:
    """While the block runs, ``PgConnection.connect`` serves ``target`` from a pool (opened here, closed at the end)."""
    made: list[bool] = []   # a connection was made (until then, a request checks the server itself: _lend)

    def made_one(raw: psycopg.Connection[Any]) -> None:
        configure(raw)
        made.append(True)

    pool: ConnectionPool[Any] = ConnectionPool(
        target.url, min_size=MIN_SIZE, max_size=MAX_SIZE, kwargs=connect_kwargs(target.url), configure=made_one,
        reset=_reset, check=ConnectionPool.check_connection, timeout=CHECKOUT_TIMEOUT_S,
        name="kbindex", open=False)
    hide = _Redacting(target.url)   # the pool logs libpq's messages, which may quote the password
    logging.getLogger("psycopg.pool").addFilter(hide)
    pool.open(wait=False)
    LENDERS[target.url] = lambda: _lend(pool, target, bool(made))
    try:
        yield
    finally:
        LENDERS.pop(target.url, None)
        pool.close()
        logging.getLogger("psycopg.pool").removeFilter(hide)


class _Redacting(logging.Filter):
    """A log record of the pool with the server URL's password hidden (:func:`kb_indexer.config.redact_message`)."""

    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_message(record.getMessage(), self.url), None
        return True


def _lend(pool: ConnectionPool[Any], target: DbUrl, made: bool) -> PgConnection:
    """A connection of ``pool``: ``close()`` gives it back. Until the pool has made a connection (a wrong
    password, a server down), a connection is opened here first, so the server's own answer is the error at
    once (the pool would wait ``CHECKOUT_TIMEOUT_S`` and only log it)."""
    if not made:
        PgConnection.open(target).close()   # raises the server's error (password hidden); else the pool serves
    try:
        raw = pool.getconn()
    except PoolTimeout as exc:
        raise PgOperationalError(f"no connection to {target} within {CHECKOUT_TIMEOUT_S:.0f} s "
                                 f"(all {MAX_SIZE} of this process's connections busy, or the server does not "
                                 f"answer within {CONNECT_TIMEOUT_S} s)", "08006") from exc
    return PgConnection(raw, target, give_back=pool.putconn)
