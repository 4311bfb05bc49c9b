"""`kbindex feedback` on a document the query never returned records it, and says so on stderr in every
format (the JSON also lists it in ``not_in_results``, as MCP kb_feedback does); a returned document gets no warning."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def asked(project, run):
    assert run("init", cwd=project).returncode == 0
    assert run("sync", cwd=project).returncode == 0
    res = run("query", "How do agents learn from trial and error?", "--format", "json", cwd=project)
    assert res.returncode == 0, res.stderr
    returned = [r["filepath"] for r in res.json()["results"]]
    assert "alphago-architecture.md" not in returned and "experience-based-learning.md" in returned
    return project


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_document_never_returned_is_recorded_with_a_warning(asked, run, fmt):
    res = run("feedback", "1", "--helpful", "alphago-architecture.md", "--format", fmt, cwd=asked)
    assert res.returncode == 0, res.stderr
    assert "query 1 never returned alphago-architecture.md" in res.stderr
    if fmt == "json":
        out = res.json()
        assert out["not_in_results"] == ["alphago-architecture.md"]
        assert [r["filepath"] for r in out["recorded"]] == ["alphago-architecture.md"]
    shown = json.loads(run("feedback", "1", "--show", "--format", "json", cwd=asked).stdout)
    assert [f["filepath"] for f in shown["feedback"]] == ["alphago-architecture.md"]


def test_a_returned_document_gets_no_warning(asked, run):
    res = run("feedback", "1", "--helpful", "experience-based-learning.md", "--format", "json", cwd=asked)
    assert res.returncode == 0 and "never returned" not in res.stderr
    assert "not_in_results" not in res.json()


def test_the_in_process_cli_warns_too(asked, cli, monkeypatch):
    monkeypatch.chdir(asked)
    res = cli("feedback", "1", "--helpful", "alphago-architecture.md", "--not-helpful",
              "experience-based-learning.md", "--format", "json")
    assert res.exit_code == 0, res.output
    assert "never returned alphago-architecture.md" in res.stderr
    assert "experience-based-learning.md" not in res.stderr.split("never returned", 1)[1]


DOCS = {"beta.md": "# Root beta\n\nThe root beta document about gliders.\n",
        "sub/beta.md": "# Sub beta\n\nThe sub beta document about gliders.\n"}


def test_kb_feedback_says_which_marked_files_the_query_never_returned(empty_kb):
    pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")
    from tests.helpers import synced
    from tests.mcp_client import data, session

    kb = synced(empty_kb, DOCS)

    async def body(s):
        asked = data(await s.call_tool("kb_query", {"question": "beta gliders", "limit": 1}))
        shown = [r["filepath"] for r in asked["results"]]
        other = next(p for p in DOCS if p not in shown)
        marked = data(await s.call_tool("kb_feedback", {"query_id": asked["query_id"], "helpful": [other]}))
        good = data(await s.call_tool("kb_feedback", {"query_id": asked["query_id"], "helpful": shown}))
        return other, marked, good

    other, marked, good = session(kb.db_path, body)
    assert marked["recorded"] == 1 and marked["not_in_results"] == [other]
    assert good["recorded"] == 1 and "not_in_results" not in good
