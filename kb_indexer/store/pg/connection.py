"""A PostgreSQL connection that the features use like ``sqlite3.Connection`` (see kb_indexer.store.engine).

psycopg 3 in autocommit mode (transactions are explicit, as on SQLite: ``BEGIN`` / ``COMMIT`` from
:func:`kb_indexer.store.connection.transaction`); each SQL string is translated once from SQLite's dialect
(:mod:`kb_indexer.store.pg.dialect`); rows allow ``row[0]``, ``row["column"]`` and ``dict(row)``; psycopg's
errors become :class:`kb_indexer.store.errors.PgError` (integrity and operational kinds), which the store's
error mapping reports as documented codes.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Callable, Iterator, Sequence

import psycopg
from psycopg.adapt import Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg.pq import version as libpq_version

from kb_indexer.config import DbUrl, redact_message
from kb_indexer.store.errors import (READ_ONLY_STATES, PgError, PgIntegrityError, PgOperationalError,
                                     busy_timeout_ms)
from kb_indexer.store.pg.dialect import translate

CONNECT_TIMEOUT_S = 10
#: A session whose client left a transaction open this long without a statement (a frozen or stopped
#: process) is ended by the server, with every lock it held. kbindex never waits on the client side inside a
#: transaction for long (a sync batch is about half a second; LLM and embedding calls are made outside one).
IDLE_IN_TRANSACTION_MS = 10 * 60_000
#: TCP keepalives, asked of both ends: a peer that stops answering (a machine powered off or cut off the network)
#: is found dead after about idle + interval x count = 2 minutes. The server then ends the dead client's session,
#: so its locks go; a client waiting on a server that vanished fails instead of waiting forever.
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 60, 10, 6
#: The client's socket gives up on data the server has not acknowledged after this long (libpq 12 and newer).
TCP_USER_TIMEOUT_MS = 120_000
#: The pools of this process, by server URL (:mod:`kb_indexer.store.pg.pool` keeps this up to date): each
#: lends a connection of its pool.
LENDERS: dict[str, Callable[[], "PgConnection"]] = {}


class Row(tuple[Any, ...]):
    """A result row: by position or by column name, like ``sqlite3.Row``."""

    __slots__ = ()
    _names: tuple[str, ...] = ()
    _pos: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._pos[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"__slots__": (), "_names": names, "_pos": {n: i for i, n in enumerate(names)}})


def _row_factory(cursor: Any) -> Any:
    desc = cursor.description
    return _row_class(tuple(d.name for d in desc)) if desc else tuple


class _FloatLoader(Loader):
    """``numeric`` (what ``avg`` and ``sum`` of bigints give) as float, as SQLite's REAL is."""

    def load(self, data: Any) -> float:
        return float(bytes(data))


def _mapped(exc: psycopg.Error) -> PgError:
    """psycopg's error as kbindex's; a statement the role may not run is operational (as SQLite's read-only
    index is): a query still answers, its history row lost."""
    kind = (PgIntegrityError if isinstance(exc, psycopg.IntegrityError)
            else PgOperationalError if isinstance(exc, psycopg.OperationalError)
            or getattr(exc, "sqlstate", None) in READ_ONLY_STATES else PgError)
    return kind(str(exc).strip(), getattr(exc, "sqlstate", None))


def connect_kwargs(url: str) -> dict[str, Any]:
    """How every kbindex connection to ``url`` is opened (alone, or by the pool of
    :mod:`kb_indexer.store.pg.pool`). The session's settings go in the start-up message (no round trip), before
    the URL's own ``options`` (or ``PGOPTIONS``), which win where they set the same; a keepalive or timeout
    parameter the URL sets is the URL's."""
    try:
        given = conninfo_to_dict(url)
    except psycopg.Error:
        given = {}   # libpq reports a malformed URL when it connects
    own = str(given.get("options") or os.environ.get("PGOPTIONS", "")).strip()
    tcp = {"keepalives": 1, "keepalives_idle": KEEPALIVE_IDLE_S, "keepalives_interval": KEEPALIVE_INTERVAL_S,
           "keepalives_count": KEEPALIVE_COUNT}
    if libpq_version() >= 120000:
        tcp["tcp_user_timeout"] = TCP_USER_TIMEOUT_MS
    return {"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S, "row_factory": _row_factory,
            "fallback_application_name": "kbindex", **{k: v for k, v in tcp.items() if k not in given},
            "options": f"{session_options()} {own}".strip()}


def session_options() -> str:
    """The server-side settings of a kbindex session: a lock not granted within the busy timeout fails its
    statement (SQLSTATE 55P03, reported as ``busy``; the jobs' advisory locks too), a transaction left idle is
    ended, and the server probes the client's TCP connection. No ``statement_timeout``: a long statement of a
    sync, an embed or a migration is work, not a wait, and is never cut short."""
    return (f"-c lock_timeout={busy_timeout_ms()} -c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS} "
            f"-c tcp_keepalives_idle={KEEPALIVE_IDLE_S} -c tcp_keepalives_interval={KEEPALIVE_INTERVAL_S} "
            f"-c tcp_keepalives_count={KEEPALIVE_COUNT}")


def configure(raw: psycopg.Connection[Any]) -> None:
    """A new connection's set-up (both ways of opening one)."""
    raw.adapters.register_loader("numeric", _FloatLoader)


class PgConnection:
    """What kbindex uses of a database connection, on a PostgreSQL server. ``give_back``: a pooled
    connection's way home (``close()`` returns it to its pool instead of closing it)."""

    engine = "postgres"
    #: Every transaction read-only (the server refuses writes: read_only), again after a reconnection.
    read_only = False
    #: On whose behalf the session asks (``kbindex.on_behalf``, which ``kb_asker()`` appends to the role;
    #: :func:`kb_indexer.store.team.on_behalf`), again after a reconnection.
    on_behalf: str | None = None

    def __init__(self, raw: psycopg.Connection[Any], target: DbUrl,
                 give_back: Callable[[psycopg.Connection[Any]], None] | None = None):
        self.raw = raw
        self.target = target
        self._lent = raw if give_back is not None else None
        self._give_back = give_back

    @classmethod
    def connect(cls, target: DbUrl, *, read_only: bool = False, on_behalf: str | None = None) -> "PgConnection":
        """A connection of the process's pool for ``target`` when one serves it, else a new one; with
        ``read_only``, one whose every transaction is read-only; with ``on_behalf``, one that asks on behalf of
        that name (each until it is closed or given back: the pool resets both)."""
        lend = LENDERS.get(target.url)
        conn = lend() if lend is not None else cls.open(target)
        try:
            if read_only:
                conn._set_read_only()
            if on_behalf:
                conn._set_on_behalf(on_behalf)
        except PgError:
            conn.close()
            raise
        return conn

    def _set_on_behalf(self, name: str) -> None:
        """The session's ``kbindex.on_behalf`` (what ``kb_asker()`` appends to the role) from now on."""
        self.on_behalf = name
        try:
            self.raw.execute("SELECT set_config('kbindex.on_behalf', %s, false)", [name])
        except psycopg.Error as exc:
            raise _mapped(exc) from exc

    def _set_read_only(self) -> None:
        """Every transaction of the session read-only from now on (the server refuses its writes)."""
        self.read_only = True
        try:
            self.raw.execute("SET default_transaction_read_only = on")
        except psycopg.Error as exc:
            raise _mapped(exc) from exc

    @classmethod
    def open(cls, target: DbUrl) -> "PgConnection":
        try:
            raw = psycopg.connect(target.url, **connect_kwargs(target.url))
        except psycopg.Error as exc:   # libpq may quote the URL, or a piece of it, in its message: hidden
            mapped = _mapped(exc)
            raise type(mapped)(redact_message(str(mapped), target.url), mapped.sqlstate) from None
        configure(raw)
        return cls(raw, target)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        """Run ``sql`` (SQLite's dialect). A connection lost outside a transaction is opened again: a read
        is retried once on it, a write is reported (whether it reached the server is unknown)."""
        query, params = translate(sql), _params(parameters)
        idle = not self.in_transaction
        try:
            return self.raw.execute(query, params)
        except psycopg.OperationalError as exc:
            if not (idle and self.raw.broken):
                raise _mapped(exc) from exc
            self._reopen(exc)
            if not _is_read(query):
                raise PgOperationalError(f"The connection to {self.target} was lost during a write and has been "
                                         "opened again; run the command again.", "08006") from exc
            try:
                return self.raw.execute(query, params)
            except psycopg.Error as again:
                raise _mapped(again) from again
        except psycopg.Error as exc:
            raise _mapped(exc) from exc

    def _reopen(self, cause: psycopg.Error) -> None:
        try:
            fresh = PgConnection.open(self.target)
        except PgError as exc:
            raise PgOperationalError(f"The connection to {self.target} was lost ({cause}) and could not be "
                                     f"opened again: {exc}", "08006") from exc
        self.raw.close()
        self.raw = fresh.raw
        if self.read_only:
            self._set_read_only()
        if self.on_behalf:
            self._set_on_behalf(self.on_behalf)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        rows = [_params(p) for p in parameters]
        cur = self.raw.cursor()
        if not rows:
            return cur
        try:
            cur.executemany(translate(sql), rows)
        except psycopg.Error as exc:
            raise _mapped(exc) from exc
        return cur

    @contextmanager
    def pipelined(self) -> Iterator[None]:
        """Statements run in the block are sent without waiting for each one's result, and wait together at
        its end: one round trip for the lot (psycopg's pipeline mode). For statements inside a transaction
        whose results the block does not read (a cursor's rows can be fetched after it); an error is
        raised at the end of the block at the latest."""
        try:
            with self.raw.pipeline():
                yield
        except psycopg.Error as exc:
            raise _mapped(exc) from exc

    def close(self) -> None:
        """Close the connection, or give a pooled one back (a broken one too: the pool drops it)."""
        lent, self._lent = self._lent, None
        if self._give_back is None:
            self.raw.close()
        elif lent is not None:
            if self.raw is not lent:  # opened again after the pooled one was lost
                self.raw.close()
            self._give_back(lent)

    def __enter__(self) -> "PgConnection":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        """As ``with`` on ``sqlite3.Connection`` (autocommit): an open transaction is committed, or rolled back
        after an error; the connection stays open (``close()`` closes it)."""
        if self.in_transaction and not self.raw.closed:
            self.execute("ROLLBACK" if exc_type is not None else "COMMIT")


def _is_read(query: str) -> bool:
    return query.lstrip()[:6].upper() == "SELECT"


#: What a NUL character in text becomes on PostgreSQL, which cannot store NUL in a text value (SQLite keeps it):
#: U+FFFD, the replacement character, in what is written and in what is looked up alike.
NUL_STAND_IN = "\ufffd"


def _param(value: Any) -> Any:
    if isinstance(value, str):
        listed = _json_list_param(value) if "\\u0000" in value and value.startswith("[") else None
        if listed is not None:
            return listed
        return value.replace("\x00", NUL_STAND_IN) if "\x00" in value else value
    if isinstance(value, list):   # an array parameter: its text elements likewise
        return [_param(v) for v in value]
    return bytes(value) if isinstance(value, memoryview) else value


def _json_list_param(value: str) -> str | None:
    """A JSON list parameter (``IN (SELECT value FROM json_each(?))``) whose strings hold a NUL, escaped as
    ``\\u0000`` (which PostgreSQL's JSON functions refuse to turn into text): the same list with each NUL as
    :data:`NUL_STAND_IN`. None for text that is not a JSON list."""
    try:
        items = json.loads(value)
    except ValueError:
        return None
    if not isinstance(items, list):
        return None
    return json.dumps([_param(v) if isinstance(v, str) else v for v in items])


def _params(parameters: Any) -> Sequence[Any] | dict[str, Any]:
    """Parameters as psycopg takes them: bytes-like values stay (a memoryview becomes bytes); a NUL in text
    (an array's elements too) becomes :data:`NUL_STAND_IN`."""
    if isinstance(parameters, dict):
        return {k: _param(v) for k, v in parameters.items()}
    return [_param(p) for p in parameters]
