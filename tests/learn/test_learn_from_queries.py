"""Learning from real recorded queries: kb.query(...), kb.learning.feedback(...), kb.learning.learn(), nothing hand-inserted."""

from __future__ import annotations

import json

import pytest
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines

DOC = "experience-based-learning.md"


def _rl_relation(kb):
    return kb.conn.execute(
        "SELECT s.id, s.score FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 "
        "JOIN keywords b ON b.id = s.keyword_id_2 WHERE s.similarity_type = 'abbreviation' AND "
        "'rl' IN (a.keyword, b.keyword) AND 'reinforcement learning' IN (a.keyword, b.keyword)").fetchone()


def _mark_rl_query(kb, n, helpful):
    res = kb.query(f"learning from experience {n}", ["reinforcement learning"], options=QueryOptions(limit=50))
    (hit,) = [r for r in res["results"] if r["filepath"] == DOC]
    assert "rl" in [k.lower() for k in hit["matched_keywords"]]  # found through the RL expansion
    kb.learning.feedback(res["query_id"], [DOC] if helpful else [], [] if helpful else [DOC])


def test_expansions_that_led_to_a_not_helpful_document_lose_score_and_undo_restores(kb):
    rel_id, original = _rl_relation(kb)
    for n in range(2):
        _mark_rl_query(kb, n, helpful=False)
    res = kb.learning.learn()
    (adj,) = [s for s in res["suggestions"] if s["kind"] == "score" and s["similarity_id"] == rel_id]
    assert adj["delta"] == pytest.approx(-0.1) and adj["not_helpful"] == 2
    assert _rl_relation(kb)[1] == pytest.approx(original - 0.1)
    kb.learning.learned_remove(all_=True)
    assert _rl_relation(kb)[1] == pytest.approx(original)
    assert kb.learning.learn(reprocess=True)["suggestions"] == []  # removed items are not learned again


def test_helpful_and_not_helpful_marks_cancel_out(kb):
    rel_id, original = _rl_relation(kb)
    _mark_rl_query(kb, 0, helpful=False)
    kb.learning.learn()
    assert _rl_relation(kb)[1] == pytest.approx(original - 0.05)
    _mark_rl_query(kb, 1, helpful=True)
    kb.learning.learn()
    assert _rl_relation(kb)[1] == pytest.approx(original)


def test_learning_twice_changes_nothing_the_second_time(kb):
    for n in range(2):
        res = kb.query(f"how does alphago plan its moves {n}", ["alphago", "game bot"])
        kb.learning.feedback(res["query_id"], ["alphago-architecture.md"], [])
    first = kb.learning.learn()
    assert {s["kind"] for s in first["suggestions"]} >= {"association", "keyword", "similarity"}
    dump = json.dumps(kb.export(), sort_keys=True)
    second = kb.learning.learn()
    assert second["suggestions"] == [] and second["feedback_analyzed"] == 0
    assert json.dumps(kb.export(), sort_keys=True) == dump


def test_a_helpful_mark_lifts_the_document_for_the_same_question_only(kb):
    question = "how do agents improve by acting and observing rewards"
    other = "python virtual environments and pip"
    other_before = kb.query(other)["results"]
    before = [r["filepath"] for r in kb.query(question, options=QueryOptions(limit=20))["results"]]
    target = "trial-and-error-learning.md"
    assert target in before and before.index(target) > 0
    qid = kb.query(question, options=QueryOptions(limit=20))["query_id"]
    kb.learning.feedback(qid, [target], [])
    kb.learning.learn()
    after = kb.query(question, options=QueryOptions(limit=20))["results"]
    paths = [r["filepath"] for r in after]
    assert paths.index(target) < before.index(target)
    assert "learned" in after[paths.index(target)]["sources"]
    assert kb.query(other)["results"] == other_before


def test_a_learned_relation_a_sync_dropped_comes_back_at_the_next_learn(kb, project):
    for n in range(2):
        res = kb.query(f"how does alphago plan its moves {n}", ["alphago", "game bot"])
        kb.learning.feedback(res["query_id"], ["alphago-architecture.md"], [])
    kb.learning.learn()
    assert [s for s in kb.similar("game bot")["similar_keywords"] if s["keyword"].lower() == "alphago"]
    # The similarities file lists the same relation (it takes the file's values), then no longer does.
    path = project / "similarities.json"
    original = path.read_text()
    data = json.loads(original)
    data["similarities"].append({"keyword1": "alphago", "keyword2": "game bot", "type": "related_concept",
                                 "context": "from the file", "score": 0.4, "directional": False})
    path.write_text(json.dumps(data))
    kb.sync()
    path.write_text(original)
    kb.sync()
    assert not [s for s in kb.similar("game bot")["similar_keywords"] if s["keyword"].lower() == "alphago"]
    res = kb.learning.learn()
    assert [s["action"] for s in res["suggestions"] if s["kind"] == "similarity"] == ["restore"]
    (rel,) = [s for s in kb.similar("game bot")["similar_keywords"] if s["keyword"].lower() == "alphago"]
    assert rel["score"] == 0.6
