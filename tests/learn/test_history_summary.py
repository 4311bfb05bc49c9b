"""`history` shows each query's attempts and relative age, as the design's
`[1] "How does AlphaGo work?" (2 attempts, 1 hour ago)`; the JSON has the same as fields
(`attempts`, `age`, `age_seconds`, `summary`)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from kb_indexer.text import age_phrase, age_seconds
from kb_indexer.api import QueryOptions


@pytest.mark.parametrize("seconds,phrase", [
    (0, "just now"), (59, "just now"), (60, "1 minute ago"), (3599, "59 minutes ago"), (3600, "1 hour ago"),
    (7199, "1 hour ago"), (86400 * 2, "2 days ago"), (86400 * 45, "1 month ago"), (86400 * 800, "2 years ago"),
    (None, None),
])
def test_age_phrase(seconds, phrase):
    assert age_phrase(seconds) == phrase


def test_age_seconds_reads_utc_and_offsets():
    now = datetime(2025, 10, 26, 11, 0, 0, tzinfo=timezone.utc)
    assert age_seconds("2025-10-26T10:00:00", now) == 3600
    assert age_seconds("2025-10-26T12:00:00+02:00", now) == 3600
    assert age_seconds("2025-10-26T12:00:00", now) == 0        # a clock ahead of ours is "just now"
    assert age_seconds("yesterday", now) is None and age_seconds(None, now) is None


def _at(kb, query_id, when):
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S")
    kb.conn.execute("UPDATE queries SET last_attempted_at = ? WHERE id = ?", (stamp, query_id))
    kb.conn.execute("UPDATE query_attempts SET created_at = ? WHERE query_id = ?", (stamp, query_id))


@pytest.fixture
def asked(kb):
    """The design's history: one question asked then refined an hour ago, one asked two days ago."""
    now = datetime.now(timezone.utc)
    old = kb.query("What is Q-learning?")["query_id"]
    _at(kb, old, now - timedelta(days=2, minutes=5))
    first = kb.query("How does AlphaGo work?", ["game AI"], options=QueryOptions(context="board games"))["query_id"]
    kb.learning.refine(first, ["AlphaGo", "Monte Carlo", "neural networks"])
    kb.learning.feedback(first, ["alphago-architecture.md", "monte-carlo-tree-search.md"], [])
    _at(kb, first, now - timedelta(hours=1, minutes=5))
    return kb, first, old


def test_json_list_has_attempts_age_and_summary(asked):
    kb, first, old = asked
    queries = kb.learning.history()["queries"]
    assert [q["query_id"] for q in queries] == [first, old]
    top = queries[0]
    assert top["attempts"] == 2 and top["feedback"] == 2 and top["age"] == "1 hour ago"
    assert 3900 <= top["age_seconds"] < 3900 + 600
    assert top["summary"] == '"How does AlphaGo work?" (2 attempts, 1 hour ago)'
    assert queries[1]["summary"] == '"What is Q-learning?" (1 attempt, 2 days ago)'


def test_json_detail_has_ages_per_attempt(asked):
    kb, first, _ = asked
    detail = kb.learning.history(first)
    assert detail["summary"] == '"How does AlphaGo work?" (2 attempts, 1 hour ago)'
    assert [a["keywords"] for a in detail["attempts"]] == [["game AI"], ["AlphaGo", "Monte Carlo", "neural networks"]]
    assert all(a["age"] == "1 hour ago" and a["age_seconds"] >= 3900 for a in detail["attempts"])


def test_table_lists_the_design_lines(asked, cli):
    kb, first, old = asked
    res = cli("history", "--db", kb.db_path)
    assert res.exit_code == 0, res.output
    assert res.stdout == (f'[{first}] "How does AlphaGo work?" (2 attempts, 1 hour ago)\n'
                          "    context: board games · 2 feedback marks\n"
                          f'[{old}] "What is Q-learning?" (1 attempt, 2 days ago)\n')
    detail = cli("history", str(first), "--db", kb.db_path)
    assert detail.stdout.startswith(f'[{first}] "How does AlphaGo work?" (2 attempts, 1 hour ago)\n')
    assert "1 hour ago" in detail.stdout.split("\n", 2)[2]   # the attempts table has an age column
    as_json = json.loads(cli("history", "--db", kb.db_path, "--format", "json").stdout)
    assert as_json["queries"][0]["age"] == "1 hour ago"


def test_empty_history_says_so(empty_kb, cli):
    res = cli("history", "--db", empty_kb.db_path)
    assert res.exit_code == 0 and res.stdout == "No queries recorded yet (run `kbindex query`).\n"
