"""The stdio transport of ``kbindex mcp``: the SDK's ``stdio_server`` over the process's stdin and stdout,
given first the line :mod:`kb_indexer.mcp.early` already read (and perhaps answered).

As the SDK does for its own streams, fd 0 is pointed at the null device and fd 1 at stderr while the
server runs, so nothing else in the process can read the protocol's input or write into its output.
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server


class _Replay:
    """stdin's lines, after the first line (read before the SDK started)."""

    def __init__(self, first: str, rest: io.TextIOWrapper):
        self._first, self._rest = first, rest

    def readline(self) -> str:
        if self._first:
            line, self._first = self._first, ""
            return line
        return self._rest.readline()


class _Once:
    """stdout, less the SDK's own answer to the request answered early (compared with it, not sent)."""

    def __init__(self, out: io.TextIOWrapper, answered: dict[str, Any] | None):
        self._out, self._answered = out, answered

    def write(self, text: str) -> int:
        if self._answered is not None:
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            if isinstance(msg, dict) and msg.get("id") == self._answered["id"] and "method" not in msg:
                if msg != self._answered:
                    print(f"kbindex mcp: the early initialize answer differs from the SDK's: {text.strip()}",
                          file=sys.stderr)
                self._answered = None
                return len(text)
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()


def _claim_std_fds() -> tuple[int, int]:
    """Private copies of fds 0 and 1 for the protocol; 0 then reads the null device and 1 writes to stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


async def serve(server: MCPServer, first_line: bytes, answered: dict[str, Any] | None) -> None:
    wire_in, wire_out = _claim_std_fds()
    stdin = io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8")
    replay = _Replay(first_line.decode("utf-8", "replace"), stdin)
    async with stdio_server(anyio.wrap_file(replay), anyio.wrap_file(_Once(stdout, answered))) as (read, write):
        low = server._lowlevel_server   # what MCPServer.run_stdio_async runs, over these streams
        await low.run(read, write, low.create_initialization_options())
