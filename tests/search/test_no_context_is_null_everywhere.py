"""A query without a context says so the same way everywhere: ``context`` is null in the query's JSON, in
`history` (list and detail) and in what feedback and attempts report."""

from __future__ import annotations

from kb_indexer.api import QueryOptions


def test_no_context_is_null_in_query_history_and_feedback_alike(kb):
    out = kb.query("alphago")
    assert out["query"]["context"] is None
    listed = kb.learning.history()["queries"][0]
    assert listed["context"] is None and kb.learning.history(out["query_id"])["context"] is None
    assert kb.learning.feedback_show(out["query_id"])["question"] == "alphago"
    with_context = kb.query("alphago", options=QueryOptions(context="board games"))
    assert kb.learning.history(with_context["query_id"])["context"] == "board games"
