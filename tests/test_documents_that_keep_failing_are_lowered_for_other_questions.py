"""A document only ever marked not helpful is lowered a little for other questions that share a term with
the questions that marked it (kb_indexer.learn.boosts.AGAINST_PRIOR): by less than one not-helpful mark lowers
it for its own question, more with more marks, never when a question sharing a term found it helpful, never
for a question with no term in common, and undoing the marks' associations (``learned remove``) stops it."""

from __future__ import annotations

import shutil

import pytest

from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.learn.apply import association_boosts
from kb_indexer.learn.boosts import AGAINST_PRIOR
from tests.conftest import BUNDLED_KB

MARKED = ("How does the Go program combine tree search and neural networks?",
          "Which neural networks evaluate board positions in Go?")
OTHER = "neural networks for image recognition"      # shares 'neural', 'network' only: not a similar question
UNRELATED = "python virtual environments"
DOC = "alphago-architecture.md"


@pytest.fixture
def kb(engine_db, tmp_path):
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


def _boost(kb, question) -> float:
    return float(association_boosts(kb.conn, question).get(_doc_id(kb), {"boost": 0.0})["boost"])


def test_a_document_marked_not_helpful_is_lowered_a_little_for_a_question_sharing_a_term(kb):
    _mark(kb, MARKED[0], not_helpful=[DOC])
    kb.learning.learn()
    one = _boost(kb, OTHER)
    assert one == pytest.approx(-AGAINST_PRIOR / 2)
    assert _boost(kb, MARKED[0]) < one < 0          # its own question lowers it far more
    assert _boost(kb, UNRELATED) == 0.0
    _mark(kb, MARKED[1], not_helpful=[DOC])
    kb.learning.learn()
    assert -AGAINST_PRIOR < _boost(kb, OTHER) < one   # two questions failed with it: lowered more, still bounded
    res = kb.query(OTHER, options=QueryOptions(explain=True, record=False))
    hit = next((r for r in res["results"] if r["filepath"] == DOC), None)
    assert hit is None or hit["score_parts"]["learned"] < 0


def test_a_helpful_mark_from_a_question_sharing_a_term_keeps_the_document_unlowered(kb):
    _mark(kb, MARKED[0], not_helpful=[DOC])
    _mark(kb, MARKED[1], helpful=[DOC])
    kb.learning.learn()
    assert _boost(kb, OTHER) >= 0


def test_undoing_the_not_helpful_associations_stops_the_prior(kb):
    _mark(kb, MARKED[0], not_helpful=[DOC])
    kb.learning.learn()
    fired = association_boosts(kb.conn, OTHER)[_doc_id(kb)]["learned_ids"]
    listed = {i["id"] for i in kb.learning.learned_list("association")["learned"]}
    assert fired and set(fired) <= listed          # `learned list` names what lowers it
    kb.learning.learned_remove(fired)
    assert _boost(kb, OTHER) == 0.0
