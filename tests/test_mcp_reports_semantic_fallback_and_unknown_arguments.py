"""MCP ``kb_query``: a semantic (or hybrid) query that ran without vectors says so in ``fallback`` (an agent
can tell the vectors were not used, and why); an argument a tool does not have is a tool error, and the
input schemas say ``additionalProperties: false``."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from tests.mcp_client import data as _data  # noqa: E402
from tests.mcp_client import session as _session  # noqa: E402


def test_a_semantic_query_without_vectors_reports_the_fallback_and_why(kb, monkeypatch):
    from kb_indexer.mcp.server import kb_query_impl

    monkeypatch.setenv("KBINDEX_LLM_BACKEND", "none")
    semantic = kb_query_impl(kb.db_path, "how do agents learn from rewards", None, "semantic", 3, None, None)
    assert semantic["results"]
    assert "no vectors" in semantic["fallback"] and "kbindex embed" in semantic["fallback"]
    both = kb_query_impl(kb.db_path, "how do agents learn", None, "hybrid", 3, "training game agents", None)
    assert "no vectors" in both["fallback"] and "lexical:" in both["fallback"]   # vectors, then the LLM
    keyword = kb_query_impl(kb.db_path, "reinforcement learning", None, "keyword", 3, None, None)
    assert "fallback" not in keyword   # no vectors asked for: nothing fell back


def test_an_unknown_argument_is_a_tool_error(kb):
    async def body(s):
        tools = (await s.list_tools()).tools
        bogus = await s.call_tool("kb_query", {"question": "markov decision process", "bogus": 1})
        fine = await s.call_tool("kb_query", {"question": "markov decision process"})
        return tools, bogus, fine
    tools, bogus, fine = _session(kb.db_path, body)
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)
    assert bogus.is_error and "bogus" in bogus.content[0].text
    assert _data(fine)["results"]
