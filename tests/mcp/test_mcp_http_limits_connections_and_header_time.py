"""`kbindex mcp --transport http` keeps what a client may hold in bounds, with or without the token: a request
whose headers do not arrive within `--header-timeout` seconds has its connection closed (uvicorn alone waited
for as long as the client kept it open), and so has one whose body, with the token, stalls or trickles in
(it held its connection for as long as the client kept sending a byte now and then); at `--max-connections` a
new connection takes the place of the one that has waited longest for its headers, or is closed at once when
every connection is busy with a request; a request refused for its missing token has its connection closed
rather than kept waiting for the body it announced. Requests sent whole are served as before."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import anyio

from tests.mcp_http_server import TOKEN, client, served

HALF_A_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
WAIT_S = 60   # how long the test waits for the server to close a connection: a bound on a hang, not a timing


def _connect(url: str) -> socket.socket:
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port), timeout=WAIT_S)
    return sock


def _closed_by_the_server(sock: socket.socket) -> tuple[bool, bytes]:
    """(whether the server closed the connection within WAIT_S seconds, what it sent before)."""
    got = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True, got
            got += chunk
    except ConnectionResetError:
        return True, got
    except TimeoutError:
        return False, got
    finally:
        sock.close()


def _served_with_the_token(url: str) -> bool:
    async def main() -> bool:
        with anyio.fail_after(120):
            async with client(url, TOKEN) as session:
                return "kb_query" in {t.name for t in (await session.list_tools()).tools}
    return anyio.run(main)


def test_a_request_whose_headers_stall_is_closed_after_the_header_timeout(kb):
    with served(kb.db_path, "--header-timeout", "1", env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        half = _connect(server.url)
        half.sendall(HALF_A_HEAD)
        silent = _connect(server.url)   # connects and sends nothing at all
        assert _closed_by_the_server(half) == (True, b"")
        assert _closed_by_the_server(silent) == (True, b"")
        assert _served_with_the_token(server.url)   # a whole request is no slower than the timeout
    assert "request headers within 1 s" in server.stderr
    assert "closed a connection whose request headers took over 1 s" in server.stderr


def test_at_the_limit_a_new_connection_takes_the_place_of_the_one_stalled_longest(kb):
    with served(kb.db_path, "--max-connections", "3", env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        held = [_connect(server.url) for _ in range(3)]
        for sock in held:
            sock.sendall(HALF_A_HEAD)
        one_more = _connect(server.url)
        one_more.sendall(HALF_A_HEAD)
        assert _closed_by_the_server(held[0])[0]   # the first, which has waited longest
        assert _served_with_the_token(server.url)   # and so on: stalled connections keep no one out
        assert server.proc.poll() is None
    assert "at most 3 connections" in server.stderr
    assert "closed the connection waiting longest for its request headers: 3 are open" in server.stderr


def test_at_the_limit_with_every_connection_busy_a_new_one_is_closed_at_once(kb):
    # a request with the token whose body the server has asked for (100 Continue) and is reading: its
    # connection is busy
    busy_head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + TOKEN.encode() +
                 b"\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
    with served(kb.db_path, "--max-connections", "3", env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        busy = [_connect(server.url) for _ in range(3)]
        for sock in busy:
            sock.sendall(busy_head)
            assert sock.recv(1024).startswith(b"HTTP/1.1 100 ")
        one_more = _connect(server.url)
        one_more.sendall(HALF_A_HEAD)
        assert _closed_by_the_server(one_more)[0]
        for sock in busy:
            sock.close()
        assert _served_with_the_token(server.url)
    assert "closed a new connection: 3 are open, the most this server keeps, and none waits" in server.stderr


def _trickled_until_closed(sock: socket.socket, rounds: int = 40) -> tuple[bool, bytes]:
    """Send one more byte of the announced body every half second (as a slow client may, forever), up to
    ``rounds`` times: (whether the server closed the connection meanwhile, what it sent)."""
    got = b""
    sock.settimeout(0.5)
    try:
        for _ in range(rounds):
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                chunk = None
            if chunk == b"":
                return True, got
            got += chunk or b""
            sock.sendall(b" ")
    except (BrokenPipeError, ConnectionResetError):
        return True, got
    finally:
        sock.close()
    return False, got


def test_a_request_refused_for_its_token_closes_its_connection(kb):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    with served(kb.db_path, env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        sock = _connect(server.url)
        # the headers announce a body that then trickles in: the 401 needs none of it, nor waits for it
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % (len(body) + 1000) + body)
        closed, answer = _trickled_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 401 ") and b"connection: close" in answer.lower()
    assert closed   # before: each byte restarted uvicorn's keep-alive timeout, so the connection stayed


def test_a_request_whose_body_stalls_or_trickles_is_closed_after_the_timeout(kb):
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + TOKEN.encode() +
            b"\r\nContent-Length: 1000\r\n\r\n{")
    with served(kb.db_path, "--header-timeout", "1", env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        stalled, trickled = _connect(server.url), _connect(server.url)
        stalled.sendall(head)
        trickled.sendall(head)
        assert _trickled_until_closed(trickled)[0]   # a byte every half second, 999 announced: closed
        assert _closed_by_the_server(stalled)[0]
        assert _served_with_the_token(server.url)   # a whole request is no slower than the timeout
    assert "closed a connection whose request body took over 1 s" in server.stderr
    assert "Traceback" not in server.stderr   # the SDK's report of each client gone mid-body is left out
