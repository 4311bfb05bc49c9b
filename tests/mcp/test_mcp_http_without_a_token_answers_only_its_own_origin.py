"""`kbindex mcp --transport http` without a token (a loopback bind, open to this machine's users): a browser's
request carries an Origin, and only the server's own (`http://127.0.0.1:<its port>`) is served; a page served on
any other local port (`http://localhost:<another port>`) is refused with 403, as is one of another host. A request
without Origin, as non-browser MCP clients send, is served. On any loopback address (127.0.0.2 too), a Host header
naming another machine (DNS rebinding) is refused with 421."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from tests.mcp_http_server import free_port, served

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}}).encode()


def _post(url: str, **headers: str) -> int:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
    request = urllib.request.Request(url, data=INITIALIZE, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_only_the_servers_own_origin_or_none_is_served(kb):
    with served(kb.db_path) as server:
        own = f"http://{urlsplit(server.url).netloc}"
        other_port = f"http://localhost:{free_port()}"
        answers = {"none": _post(server.url), "own": _post(server.url, Origin=own),
                   "another local port": _post(server.url, Origin=other_port),
                   "the same port on another name": _post(server.url, Origin=own.replace("127.0.0.1", "localhost")),
                   "another host": _post(server.url, Origin="http://evil.example")}
    assert answers == {"none": 200, "own": 200, "another local port": 403, "the same port on another name": 403,
                       "another host": 403}


def test_a_server_on_another_loopback_address_refuses_a_rebound_host(kb):
    with served(kb.db_path, host="127.0.0.2") as server:
        rebound = _post(server.url, Host="kb.example.com")
        local = _post(server.url)
    assert (rebound, local) == (421, 200)
