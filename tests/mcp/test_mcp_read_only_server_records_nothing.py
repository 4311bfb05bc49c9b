"""`kbindex mcp --read-only`, for agents that may read the knowledge base but not teach it: the tool catalog has
no kb_feedback (the other four tools say they are read-only), kb_query answers with `query_id: null` and records
nothing, skills_match refuses a session (the one thing it would write) with an error that says why, and the index
is opened read-only (on PostgreSQL, whatever the role may do). Nothing is written to the index. `--print-config`
registers such a server."""

from __future__ import annotations

import anyio
import pytest

from tests.mcp_client import data, session
from tests.mcp_http_server import TOKEN, client, served

WRITTEN = ("queries", "query_attempts", "query_feedback", "skill_sessions", "llm_cache")
READ_ONLY_REFUSAL = "read-only server (kbindex mcp --read-only)"


def _counts(kb) -> dict[str, int]:
    return {table: kb.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in WRITTEN}


async def _use(s) -> dict:
    tools = {t.name: t.annotations.read_only_hint for t in (await s.list_tools()).tools}
    found = data(await s.call_tool("kb_query", {"question": "reinforcement learning reward", "limit": 3}))
    doc = data(await s.call_tool("kb_get", {"path": found["results"][0]["filepath"]}))
    similar = await s.call_tool("kb_similar", {"keyword": "reinforcement learning"})
    skills = await s.call_tool("skills_match", {"message": "open a pdf"})
    tracked = await s.call_tool("skills_match", {"message": "open a pdf", "session": "chat-1"})
    feedback = await s.call_tool("kb_feedback", {"query_id": 1, "helpful": [doc["filepath"]]})
    return {"tools": tools, "found": found, "doc": doc, "similar": similar, "skills": skills, "tracked": tracked,
            "feedback": feedback}


def _check(out: dict) -> None:
    assert out["tools"] == {"kb_query": True, "kb_get": True, "kb_similar": True, "skills_match": True}
    assert out["found"]["results"] and out["found"]["query_id"] is None
    assert out["doc"]["text"]
    assert not out["similar"].is_error and not out["skills"].is_error
    assert out["tracked"].is_error and out["tracked"].content[0].text.count(READ_ONLY_REFUSAL) == 1
    assert out["feedback"].is_error   # not a tool of this server


@pytest.mark.both_engines
def test_a_read_only_http_server_records_nothing(kb):
    before = _counts(kb)

    async def main(url: str) -> dict:
        with anyio.fail_after(120):
            async with client(url, TOKEN) as s:
                return await _use(s)

    with served(kb.db_path, "--read-only", env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        out = anyio.run(main, server.url)
    _check(out)
    assert _counts(kb) == before
    assert "Traceback" not in server.stderr


def test_a_read_only_stdio_server_records_nothing(kb):
    before = _counts(kb)

    async def body(s) -> dict:
        return await _use(s)

    out = session(kb.db_path, body, extra=("--read-only",))
    _check(out)
    assert _counts(kb) == before


def test_print_config_registers_a_read_only_server(kb, run):
    res = run("mcp", "--db", getattr(kb.db_path, "url", kb.db_path), "--read-only", "--print-config", "claude")
    assert res.returncode == 0, res.stderr
    args = res.json()["mcpServers"]["kbindex"]["args"]
    assert args[args.index("mcp"):][:2] == ["mcp", "--read-only"]
