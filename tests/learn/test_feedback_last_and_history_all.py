"""`feedback --last` marks the most recent query, as `refine --last` refines it; `history -n 0` lists every
recorded query, as `query -n 0` returns every result (it was refused)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def test_feedback_last_and_history_all(kb, run, cli):
    for q in ("what is temporal difference learning", "how does alphago work", "what is reward shaping"):
        kb.query(q)
    last = kb.learning.last_query_id()
    res = run("feedback", "--last", "--helpful", "reward-shaping.md", "--db", kb.db_path, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert [f["filepath"] for f in kb.learning.feedback_show(last)["feedback"]] == ["reward-shaping.md"]
    both = cli("feedback", "1", "--last", "--helpful", "reward-shaping.md", "--db", str(getattr(kb.db_path, "url", kb.db_path)))
    neither = cli("feedback", "--helpful", "reward-shaping.md", "--db", str(getattr(kb.db_path, "url", kb.db_path)))
    assert both.exit_code == 2 and neither.exit_code == 2 and "--last" in neither.stderr
    listed = run("history", "-n", "0", "--db", kb.db_path, "--format", "json").json()
    assert listed["count"] == 3 and kb.learning.history(limit=0)["count"] == 3
    assert kb.learning.history(limit=2)["count"] == 2
