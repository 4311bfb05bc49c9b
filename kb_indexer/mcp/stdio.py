"""The stdio transport of ``kbindex mcp``: the SDK's ``stdio_server`` over the process's stdin and stdout,
given first the line :mod:`kb_indexer.mcp.early` already read (and perhaps answered).

A message (one line) longer than ``MAX_LINE_CHARS`` is never held whole: it is read and dropped in pieces
and answered with a JSON-RPC error (id null); the first line, which :mod:`kb_indexer.mcp.early` reads only
up to ``MAX_FIRST_LINE`` bytes, is completed here, never split.

As the SDK does for its own streams, fd 0 is pointed at the null device and fd 1 at stderr while the
server runs, so nothing else in the process can read the protocol's input or write into its output.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from typing import IO, Any, Callable, cast

import anyio
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server

from kb_indexer.mcp.early import MAX_FIRST_LINE

MAX_LINE_CHARS = 8 << 20   # a longer message is dropped (kbindex's requests are small; an answer may be big)
_PIECE = 1 << 20


def _drain(readline: Callable[[int], Any]) -> None:
    """Read and drop the rest of a line, one piece at a time."""
    while True:
        piece = readline(_PIECE)
        if not piece or piece.endswith(b"\n" if isinstance(piece, bytes) else "\n"):
            return


def _whole_first_line(first: bytes, raw: io.BufferedReader) -> bytes | None:
    """The first line, completed when ``early`` stopped at its cap; None when longer than the limit (dropped)."""
    if len(first) < MAX_FIRST_LINE or first.endswith(b"\n"):
        return first
    first += raw.readline(MAX_LINE_CHARS + 1 - len(first))
    if len(first) <= MAX_LINE_CHARS or first.endswith(b"\n"):
        return first
    _drain(raw.readline)
    return None


def _too_long(line: str) -> bool:
    return len(line) > MAX_LINE_CHARS and not line.endswith("\n")


class _Replay:
    """stdin's lines, after the first line (read before the SDK started; None: it was too long). A line
    longer than ``MAX_LINE_CHARS`` is dropped and ``refuse`` called; the next line is read."""

    def __init__(self, first: str | None, rest: io.TextIOWrapper, refuse: Callable[[], None]):
        self._first, self._rest, self._refuse, self._started = first, rest, refuse, False

    def readline(self) -> str:
        while True:
            if not self._started:
                self._started, line = True, self._first
                if line is None:
                    self._refuse()
                    continue
                if line:
                    return line
            line = self._rest.readline(MAX_LINE_CHARS + 1)
            if not _too_long(line):
                return line
            _drain(self._rest.readline)
            self._refuse()


class _Once:
    """stdout, less the SDK's own answer to the request answered early (compared with it, not sent)."""

    def __init__(self, out: io.TextIOWrapper, answered: dict[str, Any] | None):
        self._out, self._answered = out, answered
        self._lock = threading.Lock()   # the reader's refusals and the SDK's writes, one line at a time

    def refuse_long_line(self) -> None:
        print(f"kbindex mcp: a message longer than {MAX_LINE_CHARS} characters was dropped", file=sys.stderr)
        error = {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": f"Invalid Request: a message longer than {MAX_LINE_CHARS} characters "
                                       "is not read"}}
        with self._lock:
            self._out.write(json.dumps(error) + "\n")
            self._out.flush()

    def write(self, text: str) -> int:
        with self._lock:
            return self._write(text)

    def _write(self, text: str) -> int:
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
        with self._lock:
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
    raw = os.fdopen(wire_in, "rb")
    whole = _whole_first_line(first_line, raw)   # before the text wrapper reads ahead
    stdin = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    out = _Once(io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"), answered)
    replay = _Replay(None if whole is None else whole.decode("utf-8", "replace"), stdin, out.refuse_long_line)
    # _Replay and _Once have the text-file methods anyio's wrapper calls, not all of IO[str]
    read_from, write_to = anyio.wrap_file(cast(IO[str], replay)), anyio.wrap_file(cast(IO[str], out))
    async with stdio_server(read_from, write_to) as (read, write):
        low = server._lowlevel_server   # what MCPServer.run_stdio_async runs, over these streams
        await low.run(read, write, low.create_initialization_options())
