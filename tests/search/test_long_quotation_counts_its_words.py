"""A quotation of four or more words (a cited title or sentence) is searched as its exact phrase and as its
words, so a quotation the index does not hold word for word still finds what its words find; a shorter
quotation stays an exact phrase only."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.search.terms import content_terms, parse_text
from tests.helpers import synced

DOCS = {
    "backus.md": "# Functional programming\n\nAn algebra of programs liberated from the von Neumann style.\n",
    "exact.md": "# Cited\n\nCan programming be liberated from the von Neumann style? Yes.\n",
    "other.md": "# Compilers\n\nRegister allocation by graph colouring.\n",
}
CITED = '"Can programs be liberated from the von Neumann style"'   # not in any document word for word


@pytest.fixture
def docs_kb(empty_kb):
    return synced(empty_kb, DOCS)


def test_long_quotation_keeps_its_phrase_and_adds_its_words():
    parsed = parse_text('abstracts of "the von Neumann style of programs" please')
    assert parsed.phrases == ["the von neumann style of programs"]
    assert content_terms(parsed.words) == ["abstracts", "von", "neumann", "style", "programs"]


def test_short_quotation_is_only_a_phrase():
    parsed = parse_text('find "reward learning" now')
    assert parsed.phrases == ["reward learning"]
    assert [w.raw for w in parsed.words] == ["find", "now"]


def test_a_cited_title_not_held_word_for_word_finds_documents_by_its_words(docs_kb):
    out = docs_kb.query(f"Articles: {CITED}", options=QueryOptions(method="fulltext", record=False))
    found = [r["filepath"] for r in out["results"]]
    assert set(found) == {"backus.md", "exact.md"}


def test_the_exact_quotation_ranks_first(docs_kb):
    out = docs_kb.query('"Can programming be liberated from the von Neumann style"',
                   options=QueryOptions(method="fulltext", record=False))
    assert [r["filepath"] for r in out["results"]][0] == "exact.md"
