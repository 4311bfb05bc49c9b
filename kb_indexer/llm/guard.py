"""Deadlines and size caps for the HTTP under every backend that talks httpx.

httpx's timeouts bound each network operation (connect, one read), not a whole
response: a server that trickles a byte a second, or streams without end, would
keep a command running (and growing) for ever. :class:`GuardedTransport` wraps
the transport of a backend's httpx client (the Ollama SDK's and the
OpenAI-compatible backend's) and enforces a :class:`Budget`:

* every request gets at most the time left until the deadline as its connect,
  write and read timeouts, and none starts after the deadline;
* from the moment a request is sent until its body is read, a watchdog shuts
  the socket down when the deadline passes: a server that trickles its status
  line or headers (each byte within the read timeout), a body or an endless
  body ends on time. The socket is taken from httpcore's ``trace`` extension
  as the connection is made, so a request under a deadline asks for
  ``Connection: close`` (a new connection each time: a kept-alive one is made
  before the request and its socket would not be seen);
* the body is refused once it exceeds ``max_bytes``.

Failures are :class:`~kb_indexer.llm.base.LLMTimeout` and
:class:`~kb_indexer.llm.base.LLMBadResponse`, which the callers turn into
their fallback.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Iterator

import httpx

from kb_indexer.llm.base import LLMBadResponse, LLMTimeout

#: No answer this kbindex asks for is anywhere near this size (the token cap is ~1k tokens).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


class Budget:
    """The deadline of the current call (``None`` = no deadline) and the response size cap."""

    def __init__(self, max_bytes: int = MAX_RESPONSE_BYTES):
        self.deadline: float | None = None
        self.seconds: float | None = None
        self.max_bytes = max_bytes

    def start(self, seconds: float | None, shown: float | None = None) -> None:
        """The call that starts now may take ``seconds`` in all (``shown``: the user's timeout setting,
        for messages, when ``seconds`` is what is left of it)."""
        self.seconds = seconds if shown is None or seconds is None else max(seconds, shown)
        self.deadline = None if seconds is None else time.monotonic() + max(0.0, seconds)

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def timeout_error(self, url: Any) -> LLMTimeout:
        return LLMTimeout(f"no complete answer from {url} within {self.seconds:g}s")


def _limit_timeouts(request: httpx.Request, left: float) -> None:
    current = dict(request.extensions.get("timeout") or {})
    for key in ("connect", "read", "write", "pool"):
        value = current.get(key)
        current[key] = left if value is None else min(value, left)
    request.extensions["timeout"] = current


class _Watchdog:
    """Shuts a request's socket down when the deadline passes (``left`` seconds from now), from before the
    request is sent until its response is closed. :meth:`trace` is the request's ``trace`` extension: it
    keeps the connection's network stream as httpcore makes it (TCP, then TLS)."""

    _MADE = ("connect_tcp.complete", "connect_unix_socket.complete", "start_tls.complete")

    def __init__(self, left: float, chained: Any = None):
        self.stream: Any = None
        self._chained = chained
        self._timer = threading.Timer(max(0.0, left), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, name: str, info: dict[str, Any]) -> None:
        if name.endswith(self._MADE) and info.get("return_value") is not None:
            self.stream = info["return_value"]
        if self._chained is not None:
            self._chained(name, info)

    def _fire(self) -> None:
        try:
            sock = self.stream.get_extra_info("socket") if self.stream is not None else None
        except Exception:  # pragma: no cover - a stream without a socket
            sock = None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        self._timer.cancel()


class _GuardedStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, budget: Budget, url: Any, watchdog: _Watchdog | None):
        self._inner = inner
        self._budget = budget
        self._url = url
        self._watchdog = watchdog

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        try:
            for chunk in self._inner:
                size += len(chunk)
                if size > self._budget.max_bytes:
                    raise LLMBadResponse(f"the answer from {self._url} is larger than "
                                         f"{self._budget.max_bytes} bytes; gave up reading it")
                if self._budget.expired():
                    raise self._budget.timeout_error(self._url)
                yield chunk
        except (httpx.HTTPError, OSError) as exc:
            if self._budget.expired():
                raise self._budget.timeout_error(self._url) from None
            raise exc
        if self._budget.expired():  # the watchdog ended a body that only ends when the connection does
            raise self._budget.timeout_error(self._url)

    def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport that enforces a :class:`Budget` on every request it carries."""

    def __init__(self, budget: Budget, inner: httpx.BaseTransport | None = None):
        self.budget = budget
        self._inner = inner if inner is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        left = self.budget.remaining()
        watchdog = None
        if left is not None:
            if left <= 0:
                raise self.budget.timeout_error(request.url)
            _limit_timeouts(request, left)
            watchdog = _Watchdog(left, request.extensions.get("trace"))
            request.extensions["trace"] = watchdog.trace
            request.headers["Connection"] = "close"
        try:
            response = self._inner.handle_request(request)
        except (httpx.HTTPError, OSError):
            if watchdog is not None:
                watchdog.cancel()
            if self.budget.expired():   # a read timeout, or the socket the watchdog shut down
                raise self.budget.timeout_error(request.url) from None
            raise
        if watchdog is not None and response.extensions.get("network_stream") is not None:
            watchdog.stream = response.extensions["network_stream"]
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_GuardedStream(response.stream, self.budget, request.url, watchdog),
                              extensions=response.extensions, request=request)

    def close(self) -> None:
        self._inner.close()


def guard_client(client: httpx.Client, budget: Budget) -> httpx.Client:
    """Put ``budget`` on every transport of an httpx client: its own and the proxy mounts it made
    from the environment (so a request through ``HTTPS_PROXY`` is bounded too). Keeps the
    transports' TLS, proxy and pool settings."""
    transport = getattr(client, "_transport", None)
    if transport is not None and not isinstance(transport, GuardedTransport):
        client._transport = GuardedTransport(budget, transport)
    mounts = getattr(client, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, mounted in list(mounts.items()):
            if mounted is not None and not isinstance(mounted, GuardedTransport):
                mounts[pattern] = GuardedTransport(budget, mounted)
    return client
