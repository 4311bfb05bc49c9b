"""An ASGI app served over HTTP by uvicorn within limits that no client, with access or without, can exhaust:
what ``kbindex mcp --transport http`` runs on, and what any other HTTP server of kbindex can run on (this module
knows no app, and no front end).

uvicorn alone keeps every connection a client opens for as long as the client keeps it (its keep-alive timeout
starts after a first response), so a client sending half of a request's headers on many connections holds them
all, until the process has no file descriptor left. Here:

* **connections**: at most ``HttpLimits.max_connections`` open at once (default
  :data:`~kb_indexer.limits.DEFAULT_HTTP_MAX_CONNECTIONS`, and at most half the process's open-file limit,
  ``ulimit -n``: the rest is for the index's files and the worker threads). At the cap, a new connection
  takes the place of the one waiting longest for a request's headers, or is closed at once when none waits
  (all busy with a request, or kept alive after one). At most ``BACKLOG`` are accepted at once.
* **headers**: a request's headers must arrive within ``HttpLimits.header_timeout_s`` seconds of the connection
  opening (on a kept-alive connection: of the request's first byte), else the connection is closed; at most
  :data:`~kb_indexer.limits.MAX_HTTP_HEADER_BYTES` of them (400 past it, h11's limit).
* **body**: a request's body must arrive within as many seconds of its headers, and one more second for each
  :data:`~kb_indexer.limits.MIN_HTTP_BODY_RATE` bytes of it received, else the connection is closed: a client
  that announced a body and stalls (or trickles it a byte at a time) holds no connection for long, with the
  token or without (while the server itself does not read, the time does not count). A connection idle after
  a response is closed after ``KEEP_ALIVE_S`` (uvicorn's timeout). A response sent before the request's body
  was read (a refusal) closes the connection: the rest of the body is not waited for.
* **out of descriptors** all the same (a lower limit, the index's files): asyncio stops accepting for a
  second and tries again, so new connections wait in the listen queue; said in one line on stderr, and the
  server goes on.
* **logging**: one plain handler on stderr for every logger. The MCP SDK installs rich's handler, which
  imports ``rich.traceback`` when it first logs a traceback; with no descriptor left that import failed, and
  its error escaped the event loop (the server exited). Nothing on these paths imports a module.

Each refusal and timeout is said on stderr, each kind at most once every ``NOTE_EVERY_S`` seconds (with how many
were not said), so that a flood of them does not flood the log. HTTP/1.1 only (h11), on asyncio's own loop: the
behaviour above is that of these two.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import sys
import time
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from kb_indexer.limits import (DEFAULT_HTTP_HEADER_TIMEOUT_S, DEFAULT_HTTP_MAX_CONNECTIONS, MAX_HTTP_HEADER_BYTES,
                               MIN_HTTP_BODY_RATE)
from kb_indexer.limits import HttpLimits

try:
    import resource
except ImportError:  # not POSIX (Windows): no open-file limit to read
    resource = None  # type: ignore[assignment]

KEEP_ALIVE_S = 5
#: Connections waiting in the kernel's listen queue, and accepted at once (asyncio accepts up to this many before
#: the first of them is seen, so the open ones may briefly exceed the limit by as many): uvicorn's is 2,048.
BACKLOG = 128
NOTE_EVERY_S = 10.0
#: The order in which connections began waiting for a request's headers (the longest waiting is made room from).
_WAITS = itertools.count()
#: What accept() says when the process (or the system) has no descriptor or buffer left.
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def open_file_limit() -> int | None:
    """The process's soft limit on open files (``ulimit -n``), or None when it has none to read."""
    if resource is None:
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def connection_limit(given: int | None) -> int:
    """``given``, else :data:`DEFAULT_HTTP_MAX_CONNECTIONS` and at most half the open-file limit."""
    if given is not None:
        return given
    files = open_file_limit()
    return DEFAULT_HTTP_MAX_CONNECTIONS if files is None else max(1, min(DEFAULT_HTTP_MAX_CONNECTIONS, files // 2))


class _Notes:
    """Lines on stderr (``prefix: text``), each kind at most once every NOTE_EVERY_S seconds."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._said: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def say(self, kind: str, text: str) -> None:
        now = time.monotonic()
        said = self._said.get(kind)
        if said is not None and now - said < NOTE_EVERY_S:
            self._held[kind] = self._held.get(kind, 0) + 1
            return
        self._said[kind] = now
        held = self._held.pop(kind, 0)
        more = f" ({held} more since the last such line)" if held else ""
        try:
            sys.stderr.write(f"{self.prefix}: {text}{more}\n")
            sys.stderr.flush()
        except (OSError, ValueError):   # stderr closed or full: nowhere to say it
            pass


class _GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a cap on open connections and a deadline for each request's headers
    (one instance per connection; a server's settings are its subclass's, :func:`_protocol`).

    At the cap, a new connection takes the place of the one that has waited longest for a request's headers
    (a client that stalls, or one gone), so stalled connections cannot keep others out; it is closed itself
    only when none waits for headers (each is busy with a request, or kept alive after one)."""

    limit: ClassVar[int] = DEFAULT_HTTP_MAX_CONNECTIONS
    header_timeout_s: ClassVar[float] = DEFAULT_HTTP_HEADER_TIMEOUT_S
    notes: ClassVar[_Notes]
    _refused = False
    _head_timer: asyncio.TimerHandle | None = None
    _waiting_since = 0   # when it began waiting for the headers it waits for, in the order of _WAITS
    _body_timer: asyncio.TimerHandle | None = None
    _body_deadline = 0.0   # on the loop's clock: when the body being read must be in

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limit and not self._make_room():
            self._refused = True
            transport.close()
            self.notes.say("limit", f"closed a new connection: {self.limit} are open, the most this server keeps, "
                                    "and none waits for a request's headers")
            return
        super().connection_made(transport)
        self._await_head()

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for a request's headers; False when none waits."""
        waiting = [c for c in self.connections if isinstance(c, _GuardedH11) and c._head_timer is not None]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._waiting_since)
        self.connections.discard(oldest)   # now, not when the loop reports it closed
        oldest._stop_head_timer()
        oldest.transport.close()
        self.notes.say("room", f"closed the connection waiting longest for its request headers: {self.limit} are "
                               "open, the most this server keeps")
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        self._stop_body_timer()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._await_head()
        self._await_body(len(data))

    def on_response_complete(self) -> None:
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.transport.close()   # answered before the body was read (a refusal): its rest is not waited for
        super().on_response_complete()

    def _await_head(self) -> None:
        """The deadline runs while a request's headers are awaited (from the connection, or from the first byte
        of a next request: uvicorn's keep-alive timeout covers the wait before it), and stops once they are in."""
        if self.conn.their_state is not h11.IDLE:
            self._stop_head_timer()
        elif self._head_timer is None and not self.transport.is_closing():
            self._waiting_since = next(_WAITS)
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _await_body(self, received: int) -> None:
        """The deadline runs while a request's body is awaited: ``header_timeout_s`` from its headers, one second
        later for each ``MIN_HTTP_BODY_RATE`` bytes received since."""
        if self.conn.their_state is not h11.SEND_BODY:
            self._stop_body_timer()
        elif self._body_timer is None:
            self._body_deadline = self.loop.time() + self.header_timeout_s
            self._body_timer = self.loop.call_at(self._body_deadline, self._body_too_slow)
        else:
            self._body_deadline += received / MIN_HTTP_BODY_RATE

    def _stop_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self.conn.their_state is not h11.SEND_BODY or self.transport.is_closing():
            return
        if self.flow.read_paused:   # the server is not reading (the app has not taken what came): not the client
            self._body_deadline = self.loop.time() + self.header_timeout_s
        if self.loop.time() < self._body_deadline:
            self._body_timer = self.loop.call_at(self._body_deadline, self._body_too_slow)
            return
        self.transport.close()
        self.notes.say("slow body", f"closed a connection whose request body took over {self.header_timeout_s:g} s "
                                    f"(and a second more per {MIN_HTTP_BODY_RATE // 1024} KiB of it)")

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
            self.notes.say("slow", f"closed a connection whose request headers took over {self.header_timeout_s:g} s")


def _protocol(limit: int, header_timeout_s: float, notes: _Notes) -> type[_GuardedH11]:
    class Guarded(_GuardedH11):
        pass

    Guarded.limit, Guarded.header_timeout_s, Guarded.notes = limit, header_timeout_s, notes
    return Guarded


class _Server(uvicorn.Server):
    """uvicorn's server, whose event loop outlives running out of descriptors, and which says where it serves
    once it listens."""

    def __init__(self, config: uvicorn.Config, notes: _Notes, note: str):
        super().__init__(config)
        self.notes, self.note = notes, note

    async def startup(self, sockets: Any = None) -> None:
        asyncio.get_running_loop().set_exception_handler(self._loop_error)
        await super().startup(sockets)
        if self.started:
            self.notes.say("serving", f"serving {self.note}")

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio's report of an error no callback caught: out of descriptors (accept() failed; asyncio tries
        again in a second) is one line, the rest goes to asyncio's own handler (a plain log line)."""
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _OUT_OF_RESOURCES:
            open_now = len(self.server_state.connections)
            self.notes.say("descriptors", f"out of file descriptors ({exc.strerror}; {open_now} connections open): "
                           "new connections wait until some close")
            return
        loop.default_exception_handler(context)


def log_config(prefix: str) -> dict[str, Any]:
    """Every logger (uvicorn's, the MCP SDK's, asyncio's) through one plain handler on stderr, for
    :func:`logging.config.dictConfig`: the root logger's handlers (the SDK's is rich's) are replaced, and
    uvicorn's loggers send theirs to it. Nothing goes to stdout."""
    return {"version": 1, "disable_existing_loggers": False,
            "formatters": {"plain": {"format": f"{prefix}: %(levelname)s %(name)s: %(message)s"}},
            "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                                    "stream": "ext://sys.stderr"}},
            "root": {"handlers": ["stderr"], "level": "WARNING"},
            "loggers": {name: {"handlers": [], "propagate": True}
                        for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")}}


def serve(app: Any, host: str, port: int, *, name: str, note: str,
          limits: HttpLimits = HttpLimits()) -> None:
    """Serve ``app`` at ``host``:``port`` until SIGINT or SIGTERM; SystemExit(3) when it cannot listen. ``name``
    begins each line said on stderr (``kbindex mcp``); ``note``: what the line said once it listens adds to the
    address (the limits follow)."""
    notes = _Notes(name)
    limit = connection_limit(limits.max_connections)
    config = uvicorn.Config(app, host=host, port=port, http=_protocol(limit, limits.header_timeout_s, notes),
                            ws="none", loop="asyncio", backlog=BACKLOG, timeout_keep_alive=KEEP_ALIVE_S,
                            h11_max_incomplete_event_size=MAX_HTTP_HEADER_BYTES, timeout_graceful_shutdown=5,
                            log_level="warning", access_log=False, log_config=log_config(name))
    _Server(config, notes, f"{note}; at most {limit} connections, request headers within "
                           f"{limits.header_timeout_s:g} s").run()
