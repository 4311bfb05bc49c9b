"""`kbindex mcp --transport http` of this checkout, started as a subprocess on a free loopback port, and the
SDK's own streamable HTTP client against it (no double of the protocol)."""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import time
from dataclasses import dataclass
from typing import Iterator

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO, kbindex_exe

TOKEN = "team-token-" + "x7Qm" * 8


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    url: str
    proc: subprocess.Popen
    stdout: str = ""
    stderr: str = ""


def _wait_listening(proc: subprocess.Popen, host: str, port: int) -> None:
    deadline = time.monotonic() + 60
    while True:  # a poll until the server listens, not a timing assertion
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"the http server did not start: {proc.communicate()[1][-2000:]}")
            time.sleep(0.1)


def _open_files(limit: int | None):
    """What a server process runs before it starts: its open-file limit lowered to ``limit`` (None: as is)."""
    if limit is None:
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


@contextlib.contextmanager
def served(db, *extra: str, env: dict[str, str] | None = None, host: str = "127.0.0.1",
           open_files: int | None = None) -> Iterator[Served]:
    """A running `kbindex mcp --transport http --db DB *extra` (bound to ``host``; under an open-file limit of
    ``open_files``, as `ulimit -n`); its stdout and stderr once it stopped."""
    port = free_port()
    target = getattr(db, "url", db)   # a PostgreSQL target's whole URL (its str() hides the password)
    where = ["--host", host] if host != "127.0.0.1" else []
    proc = subprocess.Popen([*kbindex_exe(), "mcp", "--db", str(target), "--transport", "http", "--port", str(port),
                             *where, *extra], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                            preexec_fn=_open_files(open_files))
    server = Served(f"http://{host}:{port}/mcp", proc)
    try:
        _wait_listening(proc, host, port)
        yield server
    finally:
        proc.terminate()
        server.stdout, server.stderr = proc.communicate(timeout=60)


@contextlib.asynccontextmanager
async def client(url: str, token: str | None = None):
    """An initialised SDK ClientSession over streamable HTTP, sending the bearer token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                yield session
