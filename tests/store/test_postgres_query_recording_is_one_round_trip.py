"""On PostgreSQL a query's history is written in one round trip (its statements sent together), committed
without waiting for the server's disk in that transaction only; feedback still waits for it."""

from __future__ import annotations

import re

import pytest

from kb_indexer.learn.history import record
from tests.libpq_trace import round_trips

pytestmark = pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)


def attempt(kb, question):
    return record(kb.conn, question, None, keywords=["rl"], expand_depth=1, threshold=0.35, method="hybrid",
                  results=[], expansions=[])


def test_a_new_question_and_a_repeated_one_are_recorded_in_one_round_trip_each(kb, tmp_path):
    (qid, aid), trips, _ = round_trips(kb, tmp_path, lambda: attempt(kb, "How does RL work?"))
    assert trips == 1
    (again, aid2), trips, _ = round_trips(kb, tmp_path, lambda: attempt(kb, "How does RL work?"))
    assert trips == 1 and again == qid and aid2 > aid
    assert [tuple(r) for r in kb.conn.execute("SELECT id, query_id FROM query_attempts ORDER BY id")] == \
        [(aid, qid), (aid2, qid)]
    assert kb.conn.execute("SELECT count(*) FROM queries").fetchone()[0] == 1


def test_only_the_recording_commits_without_waiting_for_the_disk(kb, tmp_path):
    _, _, sent = round_trips(kb, tmp_path, lambda: attempt(kb, "How does RL work?"))
    assert re.search(r"SET LOCAL synchronous_commit = off", sent)
    assert kb.conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"   # LOCAL: that transaction only
    out = kb.query("reinforcement learning")
    _, _, sent = round_trips(kb, tmp_path, lambda: kb.learning.feedback(out["query_id"],
                                                                        helpful=[out["results"][0]["filepath"]]))
    assert "synchronous_commit" not in sent
