"""On PostgreSQL `learn` reads the feedback with its attempts in one statement, checks the stored associations
at once and writes a run of new associations in a few statements: its round trips do not grow with the marks
(each was a round trip per mark for its attempt, one per stored association and six per new one: a team's
learn took tens of seconds on a loaded server). What it learns is as before (the learn tests, both engines)."""

from __future__ import annotations

import pytest

from tests.libpq_trace import round_trips

pytestmark = pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)

QUESTIONS = ["reinforcement learning", "policy gradient", "reward shaping", "neural networks",
             "transformer attention", "gradient descent", "value function", "exploration strategy",
             "markov decision process", "deep learning", "q learning", "actor critic", "model based planning",
             "temporal difference", "monte carlo"]


def _mark(kb, questions):
    for q in questions:
        out = kb.query(q)
        if out["results"]:
            kb.learning.feedback(out["query_id"], helpful=[out["results"][0]["filepath"]])


def test_learn_round_trips_do_not_grow_with_the_feedback_marks(kb, tmp_path):
    _mark(kb, QUESTIONS[:3])
    _, few, _ = round_trips(kb, tmp_path, kb.learning.learn)
    _mark(kb, QUESTIONS[3:])
    got, more, _ = round_trips(kb, tmp_path, kb.learning.learn)
    marks = kb.conn.execute("SELECT count(*) FROM query_feedback").fetchone()[0]
    assert marks >= 12 and got["applied"] >= 8, (marks, got["applied"])
    assert more - few < 12, (few, more)   # fewer than one round trip per added mark
    stored = kb.conn.execute("SELECT count(*) FROM learned_items WHERE kind = 'association'").fetchone()[0]
    with_terms = kb.conn.execute("SELECT count(DISTINCT learned_id) FROM learned_terms").fetchone()[0]
    assert stored == with_terms >= 8
    again, _, _ = round_trips(kb, tmp_path, kb.learning.learn)
    assert again["applied"] == 0   # nothing new: every stored association still holds
