"""``kb.learning.feedback`` on a file the query did not return says so (``not_in_results``), and its declared
type (``kb_indexer.results.FeedbackResult``) names that key: chat's ``/helpful`` reads it."""

from __future__ import annotations

import pytest

pydantic = pytest.importorskip("pydantic", reason="pydantic comes with the MCP SDK (the dev extra)")

from kb_indexer import results  # noqa: E402

pytestmark = pytest.mark.both_engines


def test_feedback_on_a_file_outside_the_results_has_its_declared_type(kb, monkeypatch):
    monkeypatch.setattr(results.FeedbackResult, "__pydantic_config__", pydantic.ConfigDict(extra="forbid"),
                        raising=False)
    monkeypatch.setattr(results.RecordedFeedback, "__pydantic_config__", pydantic.ConfigDict(extra="forbid"),
                        raising=False)
    out = kb.query("what is alphago", ["alphago"])
    returned = {r["filepath"] for r in out["results"]}
    outside = next(d["filepath"] for d in kb.list_docs()["documents"] if d["filepath"] not in returned)
    res = kb.learning.feedback(out["query_id"], [], [outside])
    assert res["not_in_results"] == [outside]
    pydantic.TypeAdapter(results.FeedbackResult).validate_python(res, strict=True)
