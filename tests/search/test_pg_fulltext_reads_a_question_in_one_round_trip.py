"""On PostgreSQL the full-text scores of a question with phrases are read in one round trip: the totals, the
single tokens' postings and the postings (with positions) of each phrase's tokens, in one statement."""

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


def test_an_error_in_the_read_leaves_no_transaction_open(kb):
    raw = kb.conn.raw
    fulltext.forget()
    raw.execute("ALTER TABLE text_postings RENAME COLUMN positions TO gone")
    with pytest.raises(Exception, match="positions"):
        fulltext.all_scores(raw, ["reinforcement learning"], COLUMN_WEIGHTS)
    assert not kb.conn.in_transaction
    raw.execute("ALTER TABLE text_postings RENAME COLUMN gone TO positions")
    assert fulltext.all_scores(raw, ["reinforcement learning"], COLUMN_WEIGHTS)
