"""Feedback on one question helps a similar, different question (kb_indexer.learn.boosts), on both engines:
the helpful document is lifted less than for the question itself, an unrelated question gets nothing,
not-helpful marks stay with their question, and undoing the association stops it everywhere."""

from __future__ import annotations

import shutil

import pytest

from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.learn.apply import association_boosts
from kb_indexer.learn.boosts import NEIGHBOUR_MIN, similarity
from tests.conftest import BUNDLED_KB

ASKED = "How does the Go program combine tree search and neural networks?"
SIMILAR = "tree search with neural networks for board games"      # Jaccard 4/9 of the terms: not the same
UNRELATED = "python virtual environments"
DOC = "alphago-architecture.md"


@pytest.fixture
def learned_kb(engine_db, tmp_path):
    root = tmp_path / "knowledge-base"
    shutil.copytree(BUNDLED_KB, root)
    kb, _ = KnowledgeBase.init(engine_db, root)
    kb.sync()
    yield kb
    kb.close()


def _doc_id(kb) -> int:
    return int(kb.conn.execute("SELECT id FROM documents WHERE filepath = ?", (DOC,)).fetchone()[0])


def _mark(kb, question, helpful=(), not_helpful=()):
    res = kb.query(question)
    kb.learning.feedback(res["query_id"], list(helpful), list(not_helpful), attempt_id=res["attempt_id"])


def test_a_helpful_mark_lifts_the_document_for_a_similar_question_less_than_for_its_own(learned_kb):
    kb = learned_kb
    _mark(kb, ASKED, helpful=[DOC])
    kb.learning.learn()
    own = association_boosts(kb.conn, ASKED)[_doc_id(kb)]["boost"]
    similar = association_boosts(kb.conn, SIMILAR)
    assert _doc_id(kb) in similar
    assert 0 < similar[_doc_id(kb)]["boost"] < own
    assert association_boosts(kb.conn, UNRELATED) == {}
    res = kb.query(SIMILAR, options=QueryOptions(explain=True, record=False))
    hit = next(r for r in res["results"] if r["filepath"] == DOC)
    assert hit["score_parts"]["learned"] > 0


def test_not_helpful_marks_stay_with_their_question(learned_kb):
    kb = learned_kb
    _mark(kb, ASKED, not_helpful=[DOC])
    kb.learning.learn()
    assert association_boosts(kb.conn, ASKED)[_doc_id(kb)]["boost"] < 0
    assert _doc_id(kb) not in association_boosts(kb.conn, SIMILAR)


def test_undoing_the_association_stops_it_for_similar_questions_too(learned_kb):
    kb = learned_kb
    _mark(kb, ASKED, helpful=[DOC])
    kb.learning.learn()
    fired = association_boosts(kb.conn, SIMILAR)[_doc_id(kb)]["learned_ids"]
    listed = {i["id"] for i in kb.learning.learned_list("association")["learned"]}
    assert set(fired) <= listed
    kb.learning.learned_remove(fired)
    assert _doc_id(kb) not in association_boosts(kb.conn, SIMILAR)
    kb.learning.learn()   # an undone association is not learned again
    assert _doc_id(kb) not in association_boosts(kb.conn, SIMILAR)


def test_a_dry_run_lifts_nothing(learned_kb):
    kb = learned_kb
    _mark(kb, ASKED, helpful=[DOC])
    kb.learning.learn(dry_run=True)
    assert association_boosts(kb.conn, SIMILAR) == {}


def test_similarity_is_one_for_the_same_terms_and_falls_with_unshared_ones():
    assert similarity(3.0, 3.0, 3, 0) == pytest.approx(1.0)
    assert similarity(0.0, 3.0, 3, 2) == 0.0
    assert similarity(2.0, 3.0, 3, 0) > similarity(2.0, 3.0, 3, 4) > 0
    assert 0 < NEIGHBOUR_MIN < 1
