"""On PostgreSQL one question reads its full-text scores once: the later reads of the same question (its count,
its best rows, its snippets' documents) use them without a round trip, and see the same snapshot. A new
question after a write reads the new scores."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines


class _Counting:
    def __init__(self, raw):
        self.raw, self.sent = raw, []

    def __getattr__(self, name):
        return getattr(self.raw, name)

    def execute(self, *args, **kwargs):
        self.sent.append(" ".join(str(args[0]).split()))
        return self.raw.execute(*args, **kwargs)


def test_one_question_reads_its_scores_once(kb, index_engine):
    if index_engine != "postgres":
        pytest.skip("SQLite reads its full-text index in place")
    counting = _Counting(kb.conn.raw)
    kb.conn.raw = counting
    try:
        first = kb.query("policy gradient reward", options=QueryOptions(method="fulltext", limit=3, record=False))
    finally:
        kb.conn.raw = counting.raw
    from kb_indexer.store.pg.fulltext import _POSTINGS

    postings = [s for s in counting.sent if s.startswith(" ".join(_POSTINGS.split()))]   # (+ its phrases)
    assert len(postings) == 1, counting.sent
    assert not any(s == "SELECT generation FROM text_totals WHERE id = 1" for s in counting.sent), counting.sent
    assert first["results"]


def test_a_question_after_a_write_sees_it(kb, project):
    options = QueryOptions(method="fulltext", limit=5, record=False)
    assert kb.query("zanzibarite", options=options)["results"] == []
    (project / "knowledge-base" / "zanzibar.md").write_text("# Zanzibarite\n\nzanzibarite notes\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    assert [r["filepath"] for r in kb.query("zanzibarite", options=options)["results"]] == ["zanzibar.md"]
