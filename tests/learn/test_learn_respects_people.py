"""What a person did to learned items is not undone by the next `learn` (issue 8 item 4).

Learning goes through real recorded queries: kb.query(...), kb.learning.feedback(...), kb.learning.learn().
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.both_engines

DOC = "alphago-architecture.md"


def _ask_and_mark(kb, n):
    qid = kb.query(f"how does alphago plan its moves {n}", ["alphago", "game bot"])["query_id"]
    kb.learning.feedback(qid, [DOC], [])


def _relation(kb):
    rels = [s for s in kb.similar("game bot")["similar_keywords"] if s["keyword"].lower() == "alphago"]
    for rel in rels:
        rel["origin"] = kb.conn.execute(
            "SELECT origin FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 "
            "JOIN keywords b ON b.id = s.keyword_id_2 WHERE a.keyword IN ('alphago', 'game bot') "
            "AND b.keyword IN ('alphago', 'game bot')").fetchone()[0]
    return rels


def _tags(kb):
    return {k["keyword"]: k["source"] for k in kb.keywords(DOC)["keywords"]}


def _learned(kb, kind):
    return [i for i in kb.learning.learned_list(kind)["learned"]]


def test_unrelate_of_a_learned_relation_survives_more_evidence(kb):
    for n in range(2):
        _ask_and_mark(kb, n)
        kb.learning.learn()
    assert _relation(kb) and _relation(kb)[0]["origin"] == "learned"
    kb.unrelate("game bot", "alphago")
    _ask_and_mark(kb, 2)  # more evidence for the same relation
    res = kb.learning.learn()
    assert _relation(kb) == []
    assert not [s for s in res["suggestions"] if s["key"] == "similarity:alphago|game bot"]
    assert _learned(kb, "similarity") == []  # not listed as active any more


def test_relate_after_unrelate_is_the_persons_relation(kb):
    for n in range(2):
        _ask_and_mark(kb, n)
        kb.learning.learn()
    kb.unrelate("game bot", "alphago")
    kb.relate("game bot", "alphago", "related_concept", "mine", 0.3)
    _ask_and_mark(kb, 2)
    kb.learning.learn()
    (rel,) = _relation(kb)
    assert rel["score"] == 0.3 and rel["context"] == "mine" and rel["origin"] == "manual"


def test_a_learned_tag_that_a_sync_dropped_is_restored_by_the_next_learn(kb, project):
    for n in range(2):
        _ask_and_mark(kb, n)
        kb.learning.learn()
    assert _tags(kb).get("game bot") == "learned"
    (item,) = _learned(kb, "keyword")
    # A person adds the keyword to the file (their tag replaces the learned one), then takes it out again.
    path = project / "knowledge-base" / "alphago-architecture.keywords.json"
    original = path.read_text()
    data = json.loads(original)
    data["keywords"].append("game bot")
    path.write_text(json.dumps(data))
    kb.sync()
    assert _tags(kb)["game bot"] == "file"
    path.write_text(original)
    kb.sync()
    assert "game bot" not in _tags(kb)
    kb.learning.learn()  # no new feedback: the learned item is active, so the tag it stands for must hold again
    assert _tags(kb).get("game bot") == "learned"
    assert [i["id"] for i in _learned(kb, "keyword")] == [item["id"]]
