"""A query with keywords and no question (`kbindex query -k RL`) is recorded as a query of its own each time:
two of them with other keywords are not one question asked twice (feedback on one must not read as feedback on
the other), and `history` names their keywords. A question asked again still adds an attempt to its query."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def test_each_keyword_only_query_is_its_own_record(kb):
    first = kb.query("", ["reinforcement learning"])
    second = kb.query("", ["transformer"])
    again = kb.query("", ["reinforcement learning"])
    ids = {first["query_id"], second["query_id"], again["query_id"]}
    assert len(ids) == 3
    history = kb.learning.history()["queries"]
    summaries = {q["query_id"]: q["summary"] for q in history}
    assert summaries[first["query_id"]] == "keywords reinforcement learning (1 attempt, just now)"
    assert summaries[second["query_id"]] == "keywords transformer (1 attempt, just now)"
    detail = kb.learning.history(second["query_id"])
    assert detail["question"] == "" and detail["summary"].startswith("keywords transformer (1 attempt")


def test_a_question_asked_again_is_still_one_query(kb):
    a = kb.query("How does AlphaGo work?")
    b = kb.query("How does AlphaGo work?", ["game AI"])
    assert a["query_id"] == b["query_id"] and a["attempt_id"] != b["attempt_id"]
    assert kb.learning.history(a["query_id"])["summary"].startswith('"How does AlphaGo work?" (2 attempts')


def test_the_command_line_history_names_the_keywords(run, cli, kb):
    for kw in ("reinforcement learning", "transformer"):
        assert run("query", "-k", kw, "--db", kb.db_path, "--format", "json").returncode == 0
    res = run("history", "--db", kb.db_path, "--format", "json")
    assert res.returncode == 0
    assert [q["summary"].split(" (")[0] for q in res.json()["queries"]] == [
        "keywords transformer", "keywords reinforcement learning"]
    table = cli("history", "--db", str(kb.db_path))
    assert table.exit_code == 0 and "keywords transformer" in table.stdout
