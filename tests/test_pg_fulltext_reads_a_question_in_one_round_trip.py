"""On PostgreSQL the full-text scores of a question with phrases are read in one round trip: the totals, the
single tokens' postings and each phrase's documents, in one snapshot, sent together."""

from __future__ import annotations

import pytest

from kb_indexer.store.pg import fulltext
from kb_indexer.store.sparse import COLUMN_WEIGHTS
from tests.libpq_trace import round_trips

pytestmark = pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)


def test_a_question_with_two_phrases_is_one_round_trip_and_scores_as_before(kb, tmp_path):
    raw = kb.conn.raw
    terms = ["reinforcement learning", "neural network", "game"]
    fulltext.forget()
    scores, trips, _ = round_trips(kb, tmp_path, lambda: fulltext.all_scores(raw, terms, COLUMN_WEIGHTS))
    assert trips == 1 and scores
    alone = {}
    for term in terms:   # each term scored alone (one snapshot each): the parts add up to the question's
        fulltext.forget()
        for doc, score in fulltext.all_scores(raw, [term], COLUMN_WEIGHTS).items():
            alone[doc] = alone.get(doc, 0.0) + score
    assert scores == pytest.approx(alone, rel=1e-9)


def test_an_error_inside_the_pipeline_leaves_no_transaction_open(kb):
    raw = kb.conn.raw
    fulltext.forget()
    raw.execute("ALTER TABLE documents_text RENAME COLUMN tokens TO gone")
    with pytest.raises(Exception, match="tokens"):
        fulltext.all_scores(raw, ["reinforcement learning"], COLUMN_WEIGHTS)
    assert not kb.conn.in_transaction
    raw.execute("ALTER TABLE documents_text RENAME COLUMN gone TO tokens")
    assert fulltext.all_scores(raw, ["reinforcement learning"], COLUMN_WEIGHTS)
