"""The streamable HTTP transport of ``kbindex mcp --transport http``: the SDK's app behind a bearer-token gate,
served by uvicorn within the limits of :mod:`kb_indexer.http_serving` (connections, the time headers may take,
logging that survives running out of file descriptors).

Many clients at once: the SDK keeps one MCP session per client, and each tool call or resource read runs
in a worker thread with its own connection to the index (:mod:`kb_indexer.mcp.server`), never on the event
loop. With tokens (:mod:`kb_indexer.mcp.access`), a request without ``Authorization: Bearer <token>`` of one of
them is answered 401 before it reaches the SDK (and its connection closed), and said on stderr (never the token);
a request that has one carries the token's name in its ASGI scope (``kb_indexer.mcp.access.ASKER``): the asker of
its tool calls.
Without one, the SDK's Host and Origin checks keep web pages out (:func:`_guard`). Nothing is written to stdout:
every log goes to stderr, but for the SDK's traceback of a client gone before its request's body was in (a client
that stalled and whose connection was closed, :mod:`kb_indexer.http_serving`, says so once every few seconds; a
traceback per connection would flood the log).
"""

from __future__ import annotations

import logging
import sys

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_indexer import http_serving
from kb_indexer.limits import HttpLimits
from kb_indexer.mcp.access import ASKER, NamedToken, presented
from kb_indexer.text import terminal_safe

PATH = "/mcp"
_UNAUTHORISED = b'{"error":"unauthorized","message":"send Authorization: Bearer <token>"}'


def _asker(headers: list[tuple[bytes, bytes]], tokens: list[NamedToken]) -> tuple[str | None, str]:
    """(the name of the token a request's headers carry, or None; why they are refused when None)."""
    given = [value for name, value in headers if name.lower() == b"authorization"]
    if not given:
        return None, "no Authorization header"
    if len(given) > 1:
        return None, "more than one Authorization header"
    name = presented(given[0], tokens)
    return name, "" if name is not None else "wrong bearer token or not a Bearer header"


class BearerGate:
    """ASGI middleware: every http or websocket request must carry one of the bearer tokens (lifespan events
    pass); the request's scope then names it (``ASKER``)."""

    def __init__(self, app: ASGIApp, tokens: list[NamedToken]):
        self._app, self._tokens = app, list(tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        name, why = _asker(list(scope.get("headers") or []), self._tokens)
        if name is not None:
            await self._app({**scope, ASKER: name}, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        print(terminal_safe(f"kbindex mcp: 401 {scope.get('method', 'WEBSOCKET')} {scope.get('path', '')} from "
                            f"{client[0]}: {why}"), file=sys.stderr, flush=True)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="kbindex"'),
            (b"content-length", str(len(_UNAUTHORISED)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": _UNAUTHORISED})


class _GoneClients(logging.Filter):
    """Leaves out a log record whose exception is a client gone before its request's body was in."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ClientDisconnect))


def url(host: str, port: int) -> str:
    return f"{origin(host, port)}{PATH}"


def origin(host: str, port: int) -> str:
    """The server's own origin, ``http://host:port``."""
    return f"http://{_bracketed(host)}:{port}"


def _bracketed(host: str) -> str:
    """``host`` as a URL or a Host header names it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def _guard(host: str, port: int, tokens: list[NamedToken] | None) -> TransportSecuritySettings:
    """The SDK's check of the Host and Origin headers. Without a token (a loopback bind), Host must name this
    machine, so a web page cannot reach the server through a name it rebinds to 127.0.0.1, and a browser's
    Origin must be the server's own (a page served on another local port may not call it); a request without
    Origin (what non-browser clients send) passes. With a token it is off, so a reverse proxy may forward its own
    Host: a page cannot send the token."""
    if tokens:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = sorted({"127.0.0.1", "localhost", "[::1]", _bracketed(host)})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=[f"{n}:*" for n in names],
                                     allowed_origins=[origin(host, port)])


def serve(server: MCPServer, host: str, port: int, tokens: list[NamedToken] | None, limits: HttpLimits) -> None:
    """Serve ``server`` at ``url(host, port)`` until interrupted; SystemExit(3) when it cannot listen. The
    connections, header time and logging are kept in bounds by :mod:`kb_indexer.http_serving`."""
    app: ASGIApp = server.streamable_http_app(streamable_http_path=PATH, host=host,
                                               transport_security=_guard(host, port, tokens))
    if tokens:
        app = BearerGate(app, tokens)
    names = len({t.name for t in tokens or ()})
    access = (f"bearer token required ({names} name{'s' if names != 1 else ''})" if tokens
              else "no token: open to every user of this machine")
    logging.getLogger("mcp.server.streamable_http").addFilter(_GoneClients())
    http_serving.serve(app, host, port, name="kbindex mcp", note=f"{url(host, port)} ({access})", limits=limits)
