"""A long quotation's words come after the question's own words: a pasted quotation of a hundred words (a log,
a paragraph) that no document holds never pushes the question's words out of the search (the words and terms
a query keeps are bounded), as it did not before long quotations counted as words."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.search.terms import MAX_WORDS, content_terms, parse_text

PASTED = '"' + " ".join(f"zq{i}" for i in range(MAX_WORDS + 100)) + '"'


@pytest.fixture
def fox_kb(empty_kb):
    (empty_kb.kb_root / "fox.md").write_text("# Foxes\n\nThe quick brown fox jumps over the lazy dog.\n",
                                             encoding="utf-8")
    assert empty_kb.sync()["errors"] == []
    return empty_kb


def test_the_question_words_are_kept_before_a_long_quotation_words():
    terms = content_terms(parse_text(f"{PASTED} why is the lazy dog asleep").words)
    assert terms[:3] == ["lazy", "dog", "asleep"] and "zq0" in terms


@pytest.mark.parametrize("size", [70, MAX_WORDS + 100])
def test_a_long_unmatched_quotation_still_finds_the_question_words(fox_kb, size):
    pasted = '"' + " ".join(f"zq{i}" for i in range(size)) + '"'
    out = fox_kb.query(f"{pasted} lazy dog", options=QueryOptions(method="fulltext", record=False))
    assert [r["filepath"] for r in out["results"]] == ["fox.md"]
