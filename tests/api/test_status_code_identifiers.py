"""Method choice: a bare 4xx/5xx number is a status code only with a hint or other identifiers."""

from __future__ import annotations

import pytest

from kb_indexer.search.method import choose_method
from kb_indexer.api import QueryOptions


# -- lesser: a bare 4xx/5xx number is not an identifier without a hint --------------------------------------

@pytest.mark.parametrize("question", [
    "Top 500 tips for RL", "500 people attended", "the 404 experiments on airfoils", "list 503 documents",
])
def test_bare_numbers_are_not_status_codes(question):
    choice = choose_method("auto", question)
    assert choice.method == "hybrid" and choice.identifiers == []


@pytest.mark.parametrize("question", [
    "404 error", "status 500", "HTTP 503", "returns 404", "got a 404 from the API", "503 from upstream",
    "the `404` page", "fetchData() returns 500", "ENOENT then 404",
])
def test_status_codes_with_a_hint_or_other_identifiers(question):
    choice = choose_method("auto", question)
    assert choice.method == "keyword"
    assert any(i.kind == "status code" for i in choice.identifiers)


def test_bare_number_query_keeps_all_words_in_fulltext(kb):
    out = kb.query("Top 500 tips for RL", options=QueryOptions(explain=True, record=False))
    assert out["query"]["method"] == "hybrid"
    assert "tips" in out["query"]["explain"]["fulltext_terms"]
