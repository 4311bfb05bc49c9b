"""A relation between words no document is tagged with (`relate k8s kubernetes` in a folder of untagged notes)
finds the notes whose text holds the expanded word: expansions that tag nothing are searched in the full text
too. An expansion that tags documents stays a tag match only (the ranking of tagged knowledge bases is as before)."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines


@pytest.fixture
def notes(small):
    kb, root = small
    (root / "k8s-debugging.md").write_text("# Kubernetes debugging\n\nWhen a pod keeps crashing in Kubernetes, "
                                           "read its logs first.\n", encoding="utf-8")
    (root / "bread.md").write_text("# Bread\n\nflour, water, salt\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    return kb


@pytest.mark.parametrize("method", ["auto", "keyword", "hybrid", "fulltext"])
def test_the_expanded_word_is_found_in_the_text(notes, method):
    assert notes.query("k8s", options=QueryOptions(method=method, record=False))["results"] == []
    notes.relate("k8s", "kubernetes", "abbreviation", "k8s is Kubernetes", 1.0)
    out = notes.query("k8s", options=QueryOptions(method=method, record=False))
    if method == "fulltext":   # no keyword expansion in this method: as before
        assert out["results"] == []
        return
    assert [r["filepath"] for r in out["results"]] == ["k8s-debugging.md"]
    assert "kubernetes" in out["query"]["expanded_keywords"]


def test_an_expansion_that_tags_documents_is_not_added_to_the_text_query(notes):
    notes.relate("k8s", "kubernetes", "abbreviation", "k8s is Kubernetes", 1.0)
    before = notes.query("k8s", options=QueryOptions(record=False, explain=True))["query"]["explain"]
    (notes.kb_root / "k8s-debugging.keywords.json").write_text(
        '{"filepath": "k8s-debugging.md", "summary": "s", "keywords": ["kubernetes"]}', encoding="utf-8")
    notes.sync()
    out = notes.query("k8s", options=QueryOptions(record=False, explain=True))
    assert [r["filepath"] for r in out["results"]] == ["k8s-debugging.md"]
    assert "kubernetes" in before["fulltext_terms"] and "kubernetes" not in out["query"]["explain"]["fulltext_terms"]
