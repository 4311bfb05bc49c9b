"""On PostgreSQL a question's learned associations cost no more round trips than an index with none: their
rows and the count of active associations come in one statement (before: an existence check, the rows and the
count, three round trips), and the boost is the same (the learning tests, both engines)."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from tests.libpq_trace import round_trips

pytestmark = pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)


def test_a_learned_association_adds_no_round_trip(kb, tmp_path):
    options = QueryOptions(limit=5, record=False, explain=True)
    kb.query("policy gradient methods", options=options)            # warm: the same caches for both counts
    _, before, _ = round_trips(kb, tmp_path, lambda: kb.query("policy gradient methods", options=options))
    asked = kb.query("policy gradient methods")
    kb.learning.feedback(asked["query_id"], helpful=[asked["results"][-1]["filepath"]])
    assert kb.learning.learn()["applied"] >= 1
    got, after, _ = round_trips(kb, tmp_path, lambda: kb.query("policy gradient methods", options=options))
    assert any(r["score_parts"].get("learned") for r in got["results"]), [r["score_parts"] for r in got["results"]]
    assert after <= before, (before, after)
