"""`kbindex mcp --format json`: a start-up error is a JSON object on stderr (exit 1), as for every other
command; the protocol itself is JSON-RPC either way."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")


def test_a_missing_index_is_a_json_error_under_format_json(run, tmp_path):
    missing = tmp_path / "nowhere" / "kbindex.db"
    r = run("mcp", "--db", missing, "--format", "json")
    assert r.returncode == 1
    assert r.stdout == ""
    err = r.error()
    assert err["code"] == "not_initialised" and str(missing) in err["message"]


def test_a_missing_index_is_one_line_of_text_by_default(run, tmp_path):
    r = run("mcp", "--db", tmp_path / "kbindex.db")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("Error: no index at ")
