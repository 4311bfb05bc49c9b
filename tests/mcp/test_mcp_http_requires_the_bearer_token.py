"""`kbindex mcp --transport http` with a bearer token (from KBINDEX_MCP_TOKEN or --token-file): a request
without `Authorization: Bearer <token>`, or with another token, is answered 401 and said on stderr without
the token; the SDK's client sending the token is served. A loopback bind with a token checks it too."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anyio
import pytest

from tests.mcp_http_server import TOKEN, client, served

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}).encode()
WRONG = "not-the-team-token-" + "q" * 20


def _post(url: str, authorization: str | None, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP POST of an initialize request (no MCP client): (status, headers, body)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if host is not None:
        headers["Host"] = host
    if authorization is not None:
        headers["Authorization"] = authorization
    request = urllib.request.Request(url, data=INITIALIZE, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _tools(url: str, token: str) -> set[str]:
    async def main() -> set[str]:
        async with client(url, token) as session:
            return {t.name for t in (await session.list_tools()).tools}
    return anyio.run(main)


@pytest.fixture(params=["environment", "file"])
def token_source(request, tmp_path):
    """(extra arguments, environment) giving the server TOKEN, from the environment or a mode-600 file."""
    if request.param == "environment":
        return [], {"KBINDEX_MCP_TOKEN": TOKEN}
    path = tmp_path / "mcp-token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    path.chmod(0o600)
    return ["--token-file", str(path)], {}


def test_requests_without_the_token_are_refused_and_logged_without_it(kb, token_source):
    extra, env = token_source
    with served(kb.db_path, *extra, env=env) as server:
        missing = _post(server.url, None)
        wrong = _post(server.url, f"Bearer {WRONG}")
        not_bearer = _post(server.url, f"Basic {TOKEN}")
        right = _post(server.url, f"Bearer {TOKEN}")
        tools = _tools(server.url, TOKEN)
    for status, headers, body in (missing, wrong, not_bearer):
        assert status == 401, body
        assert headers.get("www-authenticate", "").startswith("Bearer")
        assert json.loads(body)["error"] == "unauthorized"
    assert right[0] == 200 and b'"serverInfo"' in right[2]
    assert "kb_query" in tools   # the SDK's client, sending the token, is served
    refusals = [line for line in server.stderr.splitlines() if " 401 " in line]
    assert len(refusals) == 3, server.stderr
    assert "no Authorization header" in refusals[0] and "POST /mcp from 127.0.0.1" in refusals[0]
    assert TOKEN not in server.stderr and WRONG not in server.stderr   # neither token is ever logged
    assert server.stdout == ""


def test_a_file_token_wins_over_the_environment(kb, tmp_path):
    path = tmp_path / "mcp-token"
    path.write_text(TOKEN, encoding="utf-8")
    path.chmod(0o600)
    with served(kb.db_path, "--token-file", str(path), env={"KBINDEX_MCP_TOKEN": WRONG}) as server:
        assert _post(server.url, f"Bearer {WRONG}")[0] == 401
        assert _post(server.url, f"Bearer {TOKEN}")[0] == 200


def test_without_a_token_a_loopback_bind_serves_everyone_on_the_machine(kb):
    with served(kb.db_path) as server:
        status, _, body = _post(server.url, None)
    assert status == 200 and b'"serverInfo"' in body
    assert "no token" in server.stderr   # the start line says the endpoint is open to local users


def test_with_a_token_a_proxy_may_forward_its_own_host_name(kb):
    """Behind a reverse proxy (TLS, a public name) the Host header is the proxy's: with a token it is served;
    without one, a loopback server answers only Host headers naming this machine (DNS rebinding)."""
    with served(kb.db_path, env={"KBINDEX_MCP_TOKEN": TOKEN}) as guarded:
        proxied = _post(guarded.url, f"Bearer {TOKEN}", host="kb.example.com")
    with served(kb.db_path) as open_locally:
        rebound = _post(open_locally.url, None, host="kb.example.com")
        local = _post(open_locally.url, None, host=open_locally.url.split("/")[2])
    assert proxied[0] == 200 and b'"serverInfo"' in proxied[2]
    assert rebound[0] == 421 and local[0] == 200
