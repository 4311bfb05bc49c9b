"""A note's learned lift for a question stays within (-1, +1) however many near-identical questions carry it
(kb_indexer.learn.boosts.lift), on both engines: six one-word variants of a question marked helpful for an
unrelated note lift it no more than the strongest of them, the right note stays first, not-helpful marks on the
variants lower the right note no more than one of them, and `--explain` shows the lift that was applied."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.learn.apply import association_boosts
from kb_indexer.learn.boosts import lift
from kb_indexer.learn.learner import question_terms

pytestmark = pytest.mark.both_engines

QUESTION = "how does alphago work"
# None of the variants' words is in the unrelated note: its full-text hits would teach it a tag, another learning.
VARIANTS = ("how does alphago really work", "how does alphago actually work", "how does alphago work in practice",
            "how exactly does alphago work", "how does alphago work today", "how does the alphago system work")
UNRELATED = "sqlite-full-text-search.md"
RIGHT = "alphago-architecture.md"


def _mark(kb, question, context, helpful=(), not_helpful=()):
    res = kb.query(question, options=QueryOptions(context=context))
    kb.learning.feedback(res["query_id"], list(helpful), list(not_helpful), attempt_id=res["attempt_id"])


def _doc(kb, filepath):
    return int(kb.conn.execute("SELECT id FROM documents WHERE filepath = ?", (filepath,)).fetchone()[0])


def _association(kb, filepath, question):
    key = f"association:{_doc(kb, filepath)}:{' '.join(question_terms(question))}"
    return next(i for i in kb.learning.learned_list("association")["learned"] if i["key"] == key)


def _ranked(kb):
    res = kb.query(QUESTION, options=QueryOptions(limit=10, explain=True, record=False))
    return {r["filepath"]: (rank, r) for rank, r in enumerate(res["results"], 1)}


def test_six_variants_marked_helpful_lift_an_unrelated_note_no_more_than_its_own_question(kb):
    _mark(kb, QUESTION, "one member", helpful=[UNRELATED])
    for v in VARIANTS:                       # twelve marks: each variant asked and marked in two contexts
        _mark(kb, v, "first time", helpful=[UNRELATED])
        _mark(kb, v, "second time", helpful=[UNRELATED])
    summary = kb.learning.learn()["summary"]
    assert summary["associations"] == 7 and summary["total"] == 7
    boost = association_boosts(kb.conn, QUESTION)[_doc(kb, UNRELATED)]
    assert boost["boost"] == pytest.approx(0.5)      # the one mark on the question itself: the strongest lift
    assert boost["learned_ids"] == [_association(kb, UNRELATED, QUESTION)["id"]]
    ranked = _ranked(kb)
    assert ranked[RIGHT][0] == 1 and ranked[UNRELATED][0] > 1
    assert ranked[UNRELATED][1]["score_parts"]["learned"] == pytest.approx(0.5, abs=1e-4)
    assert ranked[UNRELATED][1]["score_parts"]["scale"] == pytest.approx(1.5, abs=1e-4)


def test_not_helpful_marks_on_the_variants_do_not_bury_the_right_note(kb):
    _mark(kb, QUESTION, "one member", helpful=[UNRELATED])
    for v in VARIANTS:
        _mark(kb, v, "first time", helpful=[UNRELATED], not_helpful=[RIGHT])
    kb.learning.learn()
    boosts = association_boosts(kb.conn, QUESTION)
    assert boosts[_doc(kb, UNRELATED)]["boost"] == pytest.approx(0.5)
    assert boosts[_doc(kb, RIGHT)]["boost"] == pytest.approx(-0.5 * 2 / 3)   # one variant's weight x overlap
    assert len(boosts[_doc(kb, RIGHT)]["learned_ids"]) == 1
    ranked = _ranked(kb)
    assert ranked[RIGHT][0] < ranked[UNRELATED][0]
    assert ranked[RIGHT][1]["score_parts"]["learned"] == pytest.approx(-1 / 3, abs=1e-4)


def test_the_lift_is_the_strongest_helpful_plus_the_strongest_not_helpful_association():
    many = [(0.4, 1), (0.45, 2), (0.3, 3), (-0.2, 4), (-0.35, 5)]
    assert lift(many) == {"boost": pytest.approx(0.1), "learned_ids": [2, 5]}
    assert lift([(0.5, i) for i in range(1, 50)]) == {"boost": 0.5, "learned_ids": [1]}
    assert lift([(-0.25, 3)]) == {"boost": -0.25, "learned_ids": [3]}


def test_even_crafted_weights_stay_within_one_either_way():
    assert lift([(7.0, 1)])["boost"] == 1.0
    assert lift([(-3.0, 1), (-3.0, 2)])["boost"] == -1.0
    assert lift([(2.0, 1), (-0.5, 2)])["boost"] == pytest.approx(0.5)
