"""`kbindex mcp --print-config CLIENT` prints a snippet a client can use as it is: the absolute command of this
kbindex and the absolute path of the index (a PostgreSQL URL without its password), in the client's own format
(mcpServers JSON for Claude and Cursor, servers + type for VS Code, a TOML table for Codex). A real MCP client
starts the server exactly as the snippet says. The tool annotations say which tools are idempotent."""

from __future__ import annotations

import json
import os
import tomllib

import anyio
import pytest

from tests.conftest import REPO

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


def _entry(client: str, text: str) -> dict:
    if client == "codex":
        return tomllib.loads(text)["mcp_servers"]["kbindex"]
    data = json.loads(text)
    if client == "vscode":
        entry = data["servers"]["kbindex"]
        assert entry.pop("type") == "stdio"
        return entry
    return data["mcpServers"]["kbindex"]


@pytest.mark.parametrize("client", ["claude", "codex", "cursor", "vscode"])
def test_each_client_gets_absolute_paths_in_its_format(kb, run, client):
    r = run("mcp", "--print-config", client, "--db", kb.db_path, cwd=kb.kb_root)
    assert r.returncode == 0, r.stderr
    entry = _entry(client, r.stdout)
    assert os.path.isabs(entry["command"]) and os.path.isfile(entry["command"])
    assert entry["args"][-3:] == ["mcp", "--db", str(kb.db_path)]
    assert all(os.path.isabs(a) for a in entry["args"] if a.endswith((".py", ".db")))
    assert r.stderr.startswith("kbindex: add this to ")


def test_the_snippet_starts_a_working_server(kb, run):
    entry = _entry("claude", run("mcp", "--print-config", "claude", "--db", kb.db_path).stdout)
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env={"PYTHONPATH": str(REPO), **entry.get("env", {})})

    async def main():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return (await s.list_tools()).tools
    tools = {t.name: t for t in anyio.run(main)}
    assert "kb_query" in tools
    assert tools["kb_feedback"].annotations.idempotent_hint is True
    assert tools["kb_get"].annotations.idempotent_hint is True
    assert not tools["kb_query"].annotations.idempotent_hint     # each call records the question


def test_feedback_twice_is_one_mark(kb):
    out = kb.query("reinforcement learning")
    path = out["results"][0]["filepath"]
    for _ in range(2):
        kb.learning.feedback(out["query_id"], [path], [])
    marks = kb.conn.execute("SELECT count(*) FROM query_feedback WHERE query_id = ?", (out["query_id"],))
    assert marks.fetchone()[0] == 1


def test_a_server_url_is_given_without_its_password(run, tmp_path):
    r = run("mcp", "--print-config", "codex", "--db", "postgresql://bob:s3cret@db.example:5432/kb?sslmode=require",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "s3cret" not in r.stdout + r.stderr
    entry = _entry("codex", r.stdout)
    assert entry["env"]["KBINDEX_DB"] == "postgresql://bob@db.example:5432/kb?sslmode=require"
    assert entry["args"][-1] == "mcp"
    assert "password is left out" in r.stderr


def test_no_index_is_an_error_and_http_options_are_refused(run, tmp_path):
    missing = run("mcp", "--print-config", "claude", "--db", tmp_path / "none.db", "--format", "json")
    assert missing.returncode == 1 and missing.stdout == "" and missing.error()["code"] == "not_initialised"
    mixed = run("mcp", "--print-config", "claude", "--port", "9000", "--db", tmp_path / "none.db")
    assert mixed.returncode == 2
