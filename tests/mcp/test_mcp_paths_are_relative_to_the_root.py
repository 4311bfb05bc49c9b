"""Paths an MCP client sends (kb:// resources, kb_get, kb_feedback) are relative to the knowledge-base root,
as the paths the server gives it, whatever folder the server was started in: started inside a subfolder
that holds a file of the same name, the server still reads and marks the root's file. On the command line a
relative path still names a file from the working directory."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from tests.helpers import synced  # noqa: E402
from tests.mcp_client import data, session  # noqa: E402

DOCS = {"beta.md": "# Root beta\n\nThe root beta document about gliders.\n",
        "sub/beta.md": "# Sub beta\n\nThe sub beta document about gliders.\n"}


@pytest.fixture
def docs_kb(empty_kb):
    return synced(empty_kb, DOCS)


def test_a_server_started_in_a_subfolder_reads_and_marks_the_root_file(docs_kb):
    async def body(s):
        res = await s.read_resource("kb://beta.md")
        got = data(await s.call_tool("kb_get", {"path": "beta.md"}))
        asked = data(await s.call_tool("kb_query", {"question": "beta gliders"}))
        marked = data(await s.call_tool("kb_feedback", {"query_id": asked["query_id"], "helpful": ["beta.md"]}))
        return res.contents[0].text, got, marked

    text, got, marked = session(docs_kb.db_path, body, cwd=docs_kb.kb_root / "sub")
    assert "Root beta" in text and "Sub beta" not in text
    assert got["filepath"] == "beta.md"
    assert marked["recorded"] == 1
    rows = docs_kb.conn.execute("SELECT filepath FROM query_feedback").fetchall()
    assert [r[0] for r in rows] == ["beta.md"]


def test_the_command_line_still_reads_a_path_from_the_working_directory(docs_kb, run):
    res = run("show", "beta.md", "--db", docs_kb.db_path, "--format", "json", cwd=docs_kb.kb_root / "sub")
    assert res.returncode == 0 and res.json()["filepath"] == "sub/beta.md"

