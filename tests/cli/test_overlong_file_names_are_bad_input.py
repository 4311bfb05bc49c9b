"""A path with a component longer than the file system allows (255 bytes) is bad input, not a kbindex bug:
a clear error (no traceback, no server folder in the message) from the CLI and from MCP's kb:// resources."""

from __future__ import annotations

import json
import os

import pytest

LONG = "a" * 300 + ".md"


@pytest.fixture
def proj(project, run):
    assert run("init", cwd=project).returncode == 0
    assert run("sync", cwd=project).returncode == 0
    return project


@pytest.mark.parametrize("args", [["show", LONG], ["remove", LONG], ["add", LONG], ["update", LONG],
                                  ["add", "knowledge-base/markov-decision-processes.md", "--keywords", LONG]],
                         ids=["show", "remove", "add", "update", "add-keywords"])
def test_an_overlong_file_name_is_a_clear_error(proj, run, args):
    res = run(*args, "--format", "json", cwd=proj)
    assert res.returncode == 1 and res.stdout == ""
    error = json.loads(res.stderr)["error"]
    assert error["code"] in ("not_found", "invalid_input"), error
    assert "too long" in error["message"].lower() and str(proj) not in error["message"]


def test_an_overlong_kb_uri_is_an_error_without_the_server_folder(proj):
    pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")
    from mcp.shared.exceptions import MCPError

    from tests.mcp_client import session

    async def body(s):
        try:
            await s.read_resource(f"kb://{LONG}")
        except MCPError as exc:
            return exc.error.message
        return None

    message = session(proj / "kbindex.db", body)
    assert message is not None and "too long" in message.lower()
    assert os.getcwd() not in message and str(proj) not in message and "Traceback" not in message
