"""Deadlines and size caps for the HTTP under every backend that talks httpx.

httpx's timeouts bound each network operation (connect, one read), not a whole
response: a server that trickles a byte a second, or streams without end, would
keep a command running (and growing) for ever. :class:`GuardedTransport` wraps
the transport of a backend's httpx client (the Ollama SDK's and the
OpenAI-compatible backend's) and enforces a :class:`Budget`:

* every request gets at most the time left until the deadline as its connect,
  write and read timeouts, and none starts after the deadline;
* while a response body is read, a watchdog shuts the socket down when the
  deadline passes (so a trickle or an endless body ends on time), and the
  body is refused once it exceeds ``max_bytes``.

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


class _GuardedStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, budget: Budget, url: Any, sock: socket.socket | None):
        self._inner = inner
        self._budget = budget
        self._url = url
        self._timer: threading.Timer | None = None
        left = budget.remaining()
        if sock is not None and left is not None:
            self._timer = threading.Timer(max(0.0, left), _shutdown, (sock,))
            self._timer.daemon = True
            self._timer.start()

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
        if self._timer is not None:
            self._timer.cancel()
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport that enforces a :class:`Budget` on every request it carries."""

    def __init__(self, budget: Budget, inner: httpx.BaseTransport | None = None):
        self.budget = budget
        self._inner = inner if inner is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        left = self.budget.remaining()
        if left is not None:
            if left <= 0:
                raise self.budget.timeout_error(request.url)
            _limit_timeouts(request, left)
        try:
            response = self._inner.handle_request(request)
        except httpx.TimeoutException:
            if self.budget.expired():
                raise self.budget.timeout_error(request.url) from None
            raise
        sock = None
        stream = response.extensions.get("network_stream")
        if stream is not None:
            try:
                sock = stream.get_extra_info("socket")
            except Exception:  # pragma: no cover - a transport without sockets
                sock = None
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_GuardedStream(response.stream, self.budget, request.url, sock),
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
