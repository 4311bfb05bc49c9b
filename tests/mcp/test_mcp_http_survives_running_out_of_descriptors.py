"""`kbindex mcp --transport http` under a low open-file limit (`ulimit -n 64`), with a bearer token: a client
without the token opens more connections than the limit and sends half of a request's headers on each. The
server keeps serving: while they are held it keeps the newest up to its cap (by default half the limit), and when
it runs out of file descriptors all the same (a cap set above the limit) it says so in one line and
accepts again once some close. When they are released, a client with the token is served by the same process.

(Before: asyncio reported the failed accept() to the MCP SDK's rich logging handler, whose first traceback
imports `rich.traceback`; with no descriptor left that import failed, and the server exited 1.)"""

from __future__ import annotations

import contextlib
import socket
from urllib.parse import urlsplit

import anyio

from tests.mcp_http_server import TOKEN, client, served

OPEN_FILES = 64
HALF_SENT = 150   # more connections than the server may open files
HALF_A_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def _hold_half_sent_requests(url: str, count: int) -> list[socket.socket]:
    """``count`` connections to the server, each with half of a request's headers sent (those the server
    closed or has not yet accepted included)."""
    where = urlsplit(url)
    held = []
    for _ in range(count):
        with contextlib.suppress(OSError):   # a full listen queue: this one is not even connected
            sock = socket.create_connection((where.hostname, where.port), timeout=2)
            held.append(sock)
            sock.sendall(HALF_A_HEAD)
    return held


def _tools_after_releasing(server, held: list[socket.socket]) -> set[str]:
    for sock in held:
        sock.close()

    async def main() -> set[str]:
        with anyio.fail_after(120):
            async with client(server.url, TOKEN) as session:
                return {t.name for t in (await session.list_tools()).tools}
    return anyio.run(main)


def test_a_flood_of_half_sent_requests_beyond_the_open_file_limit_leaves_the_server_serving(kb):
    with served(kb.db_path, env={"KBINDEX_MCP_TOKEN": TOKEN}, open_files=OPEN_FILES) as server:
        held = _hold_half_sent_requests(server.url, HALF_SENT)
        assert server.proc.poll() is None
        tools = _tools_after_releasing(server, held)
        assert server.proc.poll() is None, server.proc.communicate()[1][-3000:]
    assert "kb_query" in tools
    assert f"at most {OPEN_FILES // 2} connections" in server.stderr   # the cap: half the open-file limit
    assert "closed the connection waiting longest for its request headers" in server.stderr
    assert "Traceback" not in server.stderr and "rich" not in server.stderr


def test_a_cap_above_the_open_file_limit_runs_out_of_descriptors_and_goes_on(kb):
    with served(kb.db_path, "--max-connections", "1000", env={"KBINDEX_MCP_TOKEN": TOKEN},
                open_files=OPEN_FILES) as server:
        held = _hold_half_sent_requests(server.url, HALF_SENT)
        assert server.proc.poll() is None
        tools = _tools_after_releasing(server, held)
        assert server.proc.poll() is None, server.proc.communicate()[1][-3000:]
    assert "kb_query" in tools
    assert "out of file descriptors" in server.stderr   # said in a line of its own, no traceback
    assert "Traceback" not in server.stderr and "rich" not in server.stderr
