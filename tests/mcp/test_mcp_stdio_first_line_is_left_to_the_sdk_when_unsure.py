"""`kbindex mcp` over stdio: an initialize request whose params the SDK might refuse (a capability of
another type, clientInfo.icons not a list) is not answered early with success: the SDK answers it (an
error). A first line longer than the early reader's 1 MiB cap is handed whole to the SDK, not split (a
2 MiB clientInfo.name gets its answer); a later line longer than the limit is dropped with a JSON-RPC error
(id null) and the session goes on."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from kb_indexer.mcp.stdio import MAX_LINE_CHARS  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.mcp.test_mcp_initialize_is_answered_before_the_sdk_loads import INITIALIZED, _line_within, _spawn, _stop  # noqa: E402

PING = b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'


def _init(capabilities=None, client=None) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": capabilities or {},
        "clientInfo": client or {"name": "test", "version": "0"}}}) + "\n").encode()


def _exchange(db, chunks: list[bytes], answers: int) -> list[dict]:
    proc, killer = _spawn(db, str(REPO))
    out = []
    try:
        for chunk in chunks:
            proc.stdin.write(chunk)
        proc.stdin.flush()
        while len(out) < answers:
            line = _line_within(proc, 60)
            if not line:
                break
            out.append(json.loads(line))
    finally:
        _stop(proc, killer)
    return out


@pytest.mark.parametrize("capabilities,client", [({"roots": 5}, None), ({"sampling": "yes"}, None),
                                                 ({}, {"name": "x", "version": "1", "icons": "zz"})])
def test_params_the_sdk_refuses_are_not_answered_early_with_success(kb, capabilities, client):
    (answer,) = _exchange(kb.db_path, [_init(capabilities, client)], 1)
    assert answer["id"] == 1 and "result" not in answer and answer["error"]["code"] == -32602


def test_a_first_line_over_the_early_cap_is_answered_whole(kb):
    name = "n" * (2 << 20)
    out = _exchange(kb.db_path, [_init(client={"name": name, "version": "1"}), INITIALIZED, PING], 2)
    assert [a["id"] for a in out] == [1, 9]
    assert out[0]["result"]["serverInfo"]["name"] == "kbindex"


def test_a_later_line_over_the_limit_is_dropped_with_an_error_and_the_session_goes_on(kb):
    huge = b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"' + b"A" * (MAX_LINE_CHARS + 10) + b'"}}\n'
    out = _exchange(kb.db_path, [_init(), INITIALIZED, huge, PING], 3)
    assert out[0]["id"] == 1 and "result" in out[0]
    assert out[1]["id"] is None and out[1]["error"]["code"] == -32600
    assert out[2] == {"jsonrpc": "2.0", "id": 9, "result": {}}
