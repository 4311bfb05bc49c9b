"""A query must ask something: an empty or blank question without a non-blank keyword is bad usage
(exit 2 with a clear message, a JSON error under --format json, UsageError in the API, a tool error over
MCP), and nothing is recorded in the history. A keyword alone is a query."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.api import QueryOptions

EMPTY = [("", None), ("   ", None), ("\t\n", []), ("", [""]), (" ", ["  ", "\t"])]


def _recorded(kb) -> int:
    return kb.conn.execute("SELECT count(*) FROM queries").fetchone()[0]


@pytest.mark.parametrize("question, keywords", EMPTY)
def test_the_api_refuses_an_empty_query_and_records_nothing(kb, question, keywords):
    with pytest.raises(UsageError, match="(the question|a keyword) is empty"):
        kb.query(question, keywords)
    with pytest.raises(UsageError, match="(the question|a keyword) is empty"):
        kb.query_markdown(question, keywords, options=QueryOptions(context="training agents"))
    assert _recorded(kb) == 0


def test_a_keyword_alone_is_a_query(kb):
    out = kb.query("", ["alphago"])
    assert out["results"] and _recorded(kb) == 1


@pytest.mark.parametrize("args", [("",), ("   ",), ("", "--keywords", " "), ("", "--sync")], ids=repr)
def test_the_command_line_says_bad_usage(run, kb, args):
    res = run("query", *args, "--db", kb.db_path)
    assert res.returncode == 2 and " is empty" in res.stderr and res.stdout == ""
    res = run("query", *args, "--db", kb.db_path, "--format", "json")
    assert res.returncode == 2 and res.error()["code"] == "usage"
    assert run("history", "--db", kb.db_path, "--format", "json").json()["queries"] == []


def test_the_mcp_tool_says_so_as_a_tool_error(kb):
    pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")
    from tests.mcp.test_mcp_server import _session

    async def body(s):
        return await s.call_tool("kb_query", {"question": "  "}), await s.call_tool("kb_query", {"question": ""})

    for result in _session(kb.db_path, body):
        assert result.is_error and "the question is empty" in result.content[0].text
    assert _recorded(kb) == 0


@pytest.mark.parametrize("question, keywords", [("x", ["   "]), ("\u200b", None), ("\u200b\u2060 \u3164", None),
                                                ("what is RL?", ["RL", "\u200b"])],
                         ids=["blank-keyword", "zero-width-question", "invisible-question", "one-blank-keyword"])
def test_an_invisible_question_or_a_blank_keyword_is_bad_usage_and_not_recorded(kb, question, keywords):
    from kb_indexer.errors import UsageError

    before = kb.conn.execute("SELECT count(*) FROM queries").fetchone()[0]
    with pytest.raises(UsageError):
        kb.query(question, keywords)
    assert kb.conn.execute("SELECT count(*) FROM queries").fetchone()[0] == before


def test_keywords_alone_need_no_question_argument(run, cli, kb):
    res = run("query", "--keywords", "alphago", "--db", kb.db_path, "--format", "json")
    assert res.returncode == 0, res.stderr
    out = res.json()
    assert out["query"]["question"] == "" and out["query"]["keywords"] == ["alphago"] and out["results"]
    assert cli("query", "-k", "alphago", "-k", "Monte Carlo", "--db", kb.db_path, "--format", "json").exit_code == 0


def test_no_question_and_no_keyword_is_bad_usage(run, kb):
    res = run("query", "--db", kb.db_path, "--format", "json")
    assert res.returncode == 2 and res.error()["code"] == "usage" and res.stdout == ""
    assert run("history", "--db", kb.db_path, "--format", "json").json()["queries"] == []


@pytest.mark.parametrize("question, keywords, message", [
    ("alphago " * 3_000, None, "at most 20,000 are allowed"),
    ("alphago", [f"k{i}" for i in range(101)], "at most 100"),
])
def test_an_oversized_question_is_bad_usage_and_not_recorded(kb, question, keywords, message):
    with pytest.raises(UsageError, match=message):
        kb.query(question, keywords)
    assert _recorded(kb) == 0
    kb.query("alphago " * 2_000, [f"k{i}" for i in range(100)])   # at the limits: fine
    assert _recorded(kb) == 1


def test_the_mcp_tool_refuses_an_oversized_question(kb):
    pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")
    from tests.mcp.test_mcp_server import _session

    async def body(s):
        return await s.call_tool("kb_query", {"question": "alphago " * 3_000})

    result = _session(kb.db_path, body)
    assert result.is_error and "at most 20,000" in result.content[0].text
    assert _recorded(kb) == 0

