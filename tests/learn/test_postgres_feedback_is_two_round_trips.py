"""On PostgreSQL feedback reads what it checks in one round trip (the query, the attempt, the documents, the
query's attempts) and writes its marks in one more (BEGIN, the marks, COMMIT sent together); what it records
and refuses is as before."""

from __future__ import annotations

import pytest

from kb_indexer.errors import NotFoundError, UsageError, ValidationError
from tests.libpq_trace import round_trips

pytestmark = pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)


def test_feedback_on_two_documents_is_two_round_trips_and_links_each_to_its_attempt(kb, tmp_path):
    out = kb.query("reinforcement learning")
    first, second = out["results"][0]["filepath"], out["results"][1]["filepath"]
    got, trips, _ = round_trips(kb, tmp_path, lambda: kb.learning.feedback(out["query_id"], helpful=[first],
                                                                           not_helpful=[second]))
    assert trips == 2
    attempt = kb.conn.execute("SELECT max(id) FROM query_attempts").fetchone()[0]
    assert [(r["filepath"], r["helpful"], r["attempt_id"]) for r in got["recorded"]] == \
        [(first, True, attempt), (second, False, attempt)]
    stored = {(r[0], r[1], r[2]) for r in kb.conn.execute("SELECT filepath, helpful, attempt_id FROM query_feedback")}
    assert stored == {(first, 1, attempt), (second, 0, attempt)}


def test_feedback_refusals_write_nothing(kb):
    out = kb.query("reinforcement learning")
    path = out["results"][0]["filepath"]
    with pytest.raises(NotFoundError):
        kb.learning.feedback(out["query_id"] + 1000, helpful=[path])
    with pytest.raises(ValidationError, match="does not belong"):
        kb.learning.feedback(out["query_id"], helpful=[path], attempt_id=out["query_id"] + 1000)
    with pytest.raises(UsageError, match="both helpful and not helpful"):
        kb.learning.feedback(out["query_id"], helpful=[path], not_helpful=[path])
    with pytest.raises(ValidationError, match="Not in the index"):
        kb.learning.feedback(out["query_id"], helpful=["nowhere.md"])
    assert kb.conn.execute("SELECT count(*) FROM query_feedback").fetchone()[0] == 0
    assert not kb.conn.in_transaction
