"""`kbindex mcp` over stdio answers `initialize` before it imports the MCP SDK (most of its start-up time):
with the SDK's import held until the client has its initialize answer, the answer still comes, and the
session then goes on as usual. The early answer is the SDK's own answer, for every handshake version
(checked against a server whose first line is not answered early)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from kb_indexer.mcp.early import HANDSHAKE_VERSIONS  # noqa: E402
from tests.conftest import REPO, kbindex_exe  # noqa: E402

INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def _init(id_, version) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": id_, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}) + "\n").encode()


def _spawn(db, pythonpath):
    """The server, with a thread reading its stdout into a queue of lines and one draining its stderr: a line
    the server wrote right after another is never stuck in a read buffer that `select` cannot see, and a
    talkative stderr never fills its pipe and blocks the server."""
    proc = subprocess.Popen([*kbindex_exe(), "mcp", "--db", str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": pythonpath})
    proc.lines = queue.Queue()
    proc.err_chunks = []
    proc.readers = [threading.Thread(target=lambda: [proc.lines.put(line) for line in iter(proc.stdout.readline, b"")],
                                     daemon=True),
                    threading.Thread(target=lambda: proc.err_chunks.extend(iter(lambda: proc.stderr.read(65536), b"")),
                                     daemon=True)]
    for reader in proc.readers:
        reader.start()
    killer = threading.Timer(120, proc.kill)
    killer.start()
    return proc, killer


def _line_within(proc, seconds) -> bytes | None:
    try:
        return proc.lines.get(timeout=seconds)
    except queue.Empty:
        return None


def _stop(proc, killer) -> bytes:
    """Kill the server, end its readers, close its pipes; its whole stderr."""
    killer.cancel()
    proc.kill()
    proc.wait()
    for reader in proc.readers:
        reader.join(10)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(BrokenPipeError):   # input left unsent when the server died: closed all the same
            pipe.close()
    return b"".join(proc.err_chunks)


def test_the_answer_comes_while_the_sdk_import_is_held(kb, tmp_path):
    gate = tmp_path / "sdk-may-load"
    hold = tmp_path / "hold"
    hold.mkdir()
    (hold / "sitecustomize.py").write_text(
        "import os, sys, time\n"
        "class _Hold:\n"
        "    def find_spec(self, name, *a):\n"
        "        if name == 'mcp_types':  # the first thing `import mcp` loads\n"
        f"            deadline = time.monotonic() + 60\n"
        f"            while not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:\n"
        "                time.sleep(0.05)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hold())\n")
    proc, killer = _spawn(kb.db_path, f"{hold}{os.pathsep}{REPO}")
    try:
        proc.stdin.write(_init(1, "2025-06-18") + INITIALIZED + b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        proc.stdin.flush()
        answer = _line_within(proc, 30)   # the SDK cannot load before the gate opens, so this is early
        gate.touch()
        tools = _line_within(proc, 90)
    finally:
        gate.touch()
        err = _stop(proc, killer)
    assert answer is not None, "no initialize answer while the SDK import was held"
    assert json.loads(answer)["result"]["serverInfo"]["name"] == "kbindex"
    assert tools is not None and {t["name"] for t in json.loads(tools)["result"]["tools"]} >= {"kb_query"}
    assert b"differs" not in err


def _answers(db, first: bytes, version: str) -> tuple[dict, bytes]:
    proc, killer = _spawn(db, str(REPO))
    try:
        # As a client does: the initialized notification and the next request only after the answer.
        proc.stdin.write(first + _init(7, version))
        proc.stdin.flush()
        lines: list = []
        for wanted, then in ((7, INITIALIZED + b'{"jsonrpc":"2.0","id":8,"method":"ping"}\n'), (8, b"")):
            while not any(json.loads(line).get("id") == wanted for line in lines):
                line = _line_within(proc, 90)
                assert line, lines
                lines.append(line)
            if then:
                proc.stdin.write(then)
                proc.stdin.flush()
    finally:
        err = _stop(proc, killer)
    return next(json.loads(line) for line in lines if json.loads(line).get("id") == 7), err


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_the_early_answer_is_the_sdks_answer(kb, version):
    early, err = _answers(kb.db_path, b"", version)
    # A first line that is not an initialize request: the SDK alone answers the initialize after it.
    sdk, _ = _answers(kb.db_path, b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}\n',
                      version)
    assert early == sdk
    assert b"differs" not in err
    assert early["result"]["protocolVersion"] == version
