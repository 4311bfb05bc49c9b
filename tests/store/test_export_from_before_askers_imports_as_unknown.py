"""An export written before kbindex recorded askers (no ``asker`` or ``excluded`` columns, none of the team
tables) imports on both engines: its history and marks are the ``unknown`` asker's, and `learn` learns from them as
before (on PostgreSQL ``unknown`` rows count as enough on their own: no role can write that name now)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.both_engines

NEW_COLUMNS = {"asker", "excluded", "author", "removed_by", "removed_at", "decided_by", "decided_at"}
NEW_TABLES = {"team_settings", "suggestion_dismissals", "search_rules"}


def _older(export: dict) -> dict:
    old = json.loads(json.dumps(export))
    for table in NEW_TABLES:
        old["tables"].pop(table, None)
    for rows in old["tables"].values():
        for row in rows:
            for col in NEW_COLUMNS & set(row):
                del row[col]
    return old


def test_an_export_from_before_askers_imports_as_unknown_and_still_teaches(kb):
    qid = kb.query("how does alphago work")["query_id"]
    kb.learning.feedback(qid, ["alphago-architecture.md"], ["supervised-learning-basics.md"])
    old = _older(kb.export())
    assert all("asker" not in r for r in old["tables"]["query_feedback"])
    kb.import_(old, force=True)
    detail = kb.learning.history(qid)
    assert detail["asker"] == "unknown" and {f["asker"] for f in detail["feedback"]} == {"unknown"}
    assert {f["excluded"] for f in detail["feedback"]} == {False}
    out = kb.learning.learn()
    assert out["applied"] > 0 and out["below_policy"] == 0
