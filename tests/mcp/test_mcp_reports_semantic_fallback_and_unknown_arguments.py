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
    assert bogus.is_error and "unknown argument 'bogus'" in bogus.content[0].text
    assert "pydantic" not in bogus.content[0].text and "Strict" not in bogus.content[0].text
    assert _data(fine)["results"]


def test_an_argument_of_another_json_type_is_a_tool_error(kb):
    """``query_id: true`` recorded feedback on query 1 (the SDK's lenient model took a boolean for an integer);
    ``limit: "5"`` and ``question: 5`` passed the same way. Each is a tool error now, nothing recorded; 2.0 is an
    integer, as JSON Schema says."""
    async def body(s):
        first = _data(await s.call_tool("kb_query", {"question": "markov decision process"}))
        path = first["results"][0]["filepath"]
        bad = [await s.call_tool("kb_feedback", {"query_id": v, "helpful": [path]}) for v in (True, 1.5, "1")]
        bad += [await s.call_tool("kb_query", {"question": "mdp", "limit": v}) for v in (True, 2.5, "5")]
        bad.append(await s.call_tool("kb_query", {"question": 5}))
        whole = await s.call_tool("kb_query", {"question": "mdp", "limit": 2.0})   # an integer in JSON Schema
        good = await s.call_tool("kb_feedback", {"query_id": first["query_id"], "helpful": [path]})
        return bad, whole, good
    bad, whole, good = _session(kb.db_path, body)
    assert all(r.is_error for r in bad), [r.content[0].text for r in bad if not r.is_error]
    texts = [r.content[0].text for r in bad]
    assert "argument 'limit': input should be a valid integer, got \"5\"" in texts[5]
    assert "argument 'question': input should be a valid string, got 5" in texts[6]
    assert not [t for t in texts if "errors.pydantic.dev" in t or "validation error for" in t]
    assert not whole.is_error and len(_data(whole)["results"]) <= 2
    assert not good.is_error and _data(good)["recorded"] == 1


def test_a_query_on_an_out_of_date_index_says_so(kb):
    """As `kbindex query` says on stderr and in its JSON: a note added since the last sync is not searched."""
    async def body(s):
        fresh = _data(await s.call_tool("kb_query", {"question": "markov decision process"}))
        (kb.kb_root / "new-note.md").write_text("# New\n\nmarkov chains again\n", encoding="utf-8")
        return fresh, _data(await s.call_tool("kb_query", {"question": "markov decision process"}))
    fresh, stale = _session(kb.db_path, body)
    assert "stale" not in fresh
    assert "kbindex sync" in stale["stale"] and "new-note.md" in stale["stale"]
