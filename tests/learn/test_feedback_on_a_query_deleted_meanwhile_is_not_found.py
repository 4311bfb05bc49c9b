"""Feedback checks its query in one read and writes in another: a `clear-history` (or `import --force`) from another
process in between made the insert fail its foreign key, reported as ``internal``. It is ``not_found`` now, with
nothing written."""

from __future__ import annotations

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import NotFoundError
from kb_indexer.learn import feedback as fb

pytestmark = pytest.mark.both_engines


def test_the_query_deleted_between_the_check_and_the_write(kb, monkeypatch):
    out = kb.query("how do agents learn from experience")
    path = out["results"][0]["filepath"]
    real = fb._attempt_for

    def meanwhile(*args, **kwargs):   # another process clears the history after the check
        with KnowledgeBase.open(getattr(kb.db_path, "url", kb.db_path), kb.kb_root) as other:
            other.learning.clear_history(all_=True)
        return real(*args, **kwargs)

    monkeypatch.setattr(fb, "_attempt_for", meanwhile)
    with pytest.raises(NotFoundError, match=f"No query with id {out['query_id']} any more"):
        kb.learning.feedback(out["query_id"], [path], [])
    assert kb.conn.execute("SELECT COUNT(*) FROM query_feedback").fetchone()[0] == 0
