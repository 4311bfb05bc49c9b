"""On large knowledge bases, terms found in more than half of the documents are left out of full text."""

from __future__ import annotations

import pytest

from helpers import write_doc
from kb_indexer.search import pruning
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines


@pytest.fixture
def common_word_kb(small, monkeypatch):
    monkeypatch.setattr(pruning, "PRUNE_MIN_DOCS", 1)   # the rule, on a knowledge base small enough to build
    handle, kbdir = small
    for i in range(6):
        extra = " glacier" if i == 2 else ""
        write_doc(kbdir, f"d{i}.md", f"# Note {i}\n\nThe system behaves{extra}; systems again.\n")
    handle.sync()
    return handle


def test_a_word_in_most_documents_is_pruned_and_said(common_word_kb):
    out = common_word_kb.query("system glacier", options=QueryOptions(explain=True, record=False))
    explain = out["query"]["explain"]
    assert explain["fulltext_pruned"] == ["system"]
    assert explain["fulltext_terms"] == ["glacier"]
    assert [r["filepath"] for r in out["results"]] == ["d2.md"]


def test_if_every_term_is_common_nothing_is_pruned(common_word_kb):
    out = common_word_kb.query("system behaves", options=QueryOptions(explain=True, record=False))
    assert out["query"]["explain"]["fulltext_pruned"] == []
    assert out["count"] == 6


def test_phrases_are_never_pruned(common_word_kb):
    out = common_word_kb.query('"system behaves" glacier', options=QueryOptions(explain=True, record=False))
    assert out["query"]["explain"]["fulltext_pruned"] == []


def test_small_knowledge_bases_keep_every_term(small):
    handle, kbdir = small
    for i in range(3):
        write_doc(kbdir, f"d{i}.md", "# N\n\nsystem\n")
    handle.sync()
    assert handle.query("system other",
                        options=QueryOptions(explain=True, record=False))["query"]["explain"]["fulltext_pruned"] == []


def test_tokenising_matches_the_index(common_word_kb):
    singles = pruning.single_tokens(common_word_kb.conn, ("Systems", "q-learning", "café", "reinforcement learning"))
    assert singles == {0: "system", 2: "cafe"}


def test_each_terms_count_is_capped_and_one_statement_on_postgres(common_word_kb, index_engine):
    from kb_indexer.search.fulltext import build_query
    from kb_indexer.store import fulltext

    conn = common_word_kb.conn
    queries = [build_query([t]) for t in ("system", "glacier", "Systems", "absent", '"system behaves"')]
    expected = [fulltext.count_matching(conn, q, 4) for q in queries]
    assert expected == [4, 1, 4, 0, 4]
    if index_engine != "postgres":
        assert fulltext.count_each(conn, queries[:4], 4) == expected[:4]
        return
    raw, sent = conn.raw, []

    class Counting:
        def __getattr__(self, name):
            return getattr(raw, name)

        def execute(self, *args, **kwargs):
            sent.append(args[0])
            return raw.execute(*args, **kwargs)

    conn.raw = Counting()
    try:
        assert fulltext.count_each(conn, queries[:4], 4) == expected[:4]
    finally:
        conn.raw = raw
    assert len(sent) == 1, sent
