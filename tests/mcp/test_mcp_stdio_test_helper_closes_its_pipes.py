"""The MCP stdio tests' helper (`_spawn` / `_stop`) leaves nothing behind: the server is reaped, its reader
threads have ended and its three pipes are closed (they leaked, one ResourceWarning each, per server)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from tests.conftest import REPO  # noqa: E402
from tests.mcp.test_mcp_initialize_is_answered_before_the_sdk_loads import (INITIALIZED, _init, _line_within,  # noqa: E402
                                                                         _spawn, _stop)


def test_stop_reaps_the_server_and_closes_its_pipes(kb):
    proc, killer = _spawn(kb.db_path, str(REPO))
    try:
        proc.stdin.write(_init(1, "2025-06-18") + INITIALIZED)
        proc.stdin.flush()
        assert _line_within(proc, 90) is not None
    finally:
        _stop(proc, killer)
    assert proc.returncode is not None and not killer.is_alive()
    assert not any(reader.is_alive() for reader in proc.readers)
    assert proc.stdin.closed and proc.stdout.closed and proc.stderr.closed


def test_stop_after_the_server_died_with_input_still_buffered_does_not_raise(kb):
    proc, killer = _spawn(kb.db_path, str(REPO))
    proc.kill()
    proc.wait()
    proc.stdin.write(b"{}\n")   # buffered, never flushed: closing flushes it into a broken pipe
    _stop(proc, killer)
    assert proc.stdin.closed and proc.stdout.closed and proc.stderr.closed
