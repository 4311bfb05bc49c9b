"""User text is never FTS5 syntax: every input works or gives an empty result, never an SQLite error."""

from __future__ import annotations

import json
import re

import pytest

from kb_indexer.search.fulltext import build_query, quote
from kb_indexer.search.terms import content_terms, parse_text
from kb_indexer.api import QueryOptions
from tests.helpers import synced

DOCS = {
    "alpha.md": "# Alpha notes\n\nReinforcement learning agents learn from reward. NEAR the title column.\n",
    "beta.md": "# Beta notes\n\nSupervised learning uses labels. 学习方法 and 상태 관리 are covered here.\n",
    "gamma.md": "# Gamma notes\n\nLearning to rank with BM25; the snake_case_name and App.tsx files.\n",
}


@pytest.fixture
def small(empty_kb):
    return synced(empty_kb, DOCS)


NASTY = [
    '"', '""', '"unbalanced quote', "'", "(", ")", "()", "(learning", "learning)",
    "NEAR(learning reward)", "NEAR(learning reward, 2)", "learning NEAR reward",
    "AND", "OR", "NOT", "learning AND reward", "learning OR", "NOT learning", "learning NOT reward", "AND OR NOT",
    "*", "learn*", "^learning", "^", "-learning", "- learning", "--", "+learning",
    "title:learning", "body:reward", "{title body}:learning", "-title:learning", "title : learning", ":",
    "learning:", "col:", "rowid", "rank", "documents_fts", "bm25(documents_fts)",
    "'; DROP TABLE documents; --", "\\", "\\\"", "%", "_", "\x00", "a\x00b", "\t\n",
    "", "   ", "the of and", "what is the", "a", "is it",
    "学习方法", "상태 관리", "ラーニング", "😀", "😀🔥💯", "learning 😀", "👍🏽 reward",
    "café résumé naïve", "ﬁne-tuning", "Q-learning", "snake_case_name", "App.tsx", "useState()",
    "$x", "@user", "#tag",
    "x" * 5000, " ".join(f"w{i}" for i in range(2000)), "learning " * 500,
]


# The 290 inputs by 4 methods run on SQLite in the plain run (on PostgreSQL they take ten minutes: a fresh
# database each); KBINDEX_TEST_ENGINE=postgres runs them on PostgreSQL.
@pytest.mark.parametrize("text", NASTY)
@pytest.mark.parametrize("method", ["auto", "fulltext", "hybrid", "keyword"])
def test_nasty_input_never_errors(small, text, method):
    from kb_indexer.errors import UsageError
    from kb_indexer.text import is_blank

    if is_blank(text):  # nothing to ask: bad usage, never a search error (tests/search/test_empty_query_is_bad_usage.py)
        with pytest.raises(UsageError):
            small.query(text, options=QueryOptions(method=method, limit=5))
        return
    out = small.query(text, options=QueryOptions(method=method, limit=5))
    assert isinstance(out["results"], list)
    assert out["count"] == len(out["results"]) <= 5
    for r in out["results"]:
        assert 0.0 <= r["relevance_score"] <= 1.0
    json.dumps(out)


@pytest.mark.both_engines
@pytest.mark.parametrize("text", ["learning AND reward", "NEAR(learning reward)", "title:learning", "-learning"])
def test_operators_are_plain_words(small, text):
    """Operators and column filters are just words: the query still finds documents with 'learning'."""
    out = small.query(text, options=QueryOptions(method="fulltext", limit=10))
    assert out["count"] >= 1
    match = out["query"]  # the FTS expression is only quoted literals joined by OR
    explained = small.query(text,
                            options=QueryOptions(method="fulltext", explain=True, record=False))["query"]["explain"]
    assert re.fullmatch(r'"[^"]*"( OR "[^"]*")*', explained["fulltext_match"]), explained["fulltext_match"]
    assert match["method"] == "fulltext"


@pytest.mark.both_engines
@pytest.mark.parametrize("text", ["the of and", "what is it", "😀🔥", "()", "*", "^", '"'])
def test_stopword_or_symbol_only_give_empty_result(small, text):
    out = small.query(text, options=QueryOptions(method="fulltext"))
    assert out["results"] == [] and out["count"] == 0


@pytest.mark.both_engines
def test_cjk_terms_match_whole_tokens(small):
    assert [r["filepath"] for r in small.query("学习方法",
                                               options=QueryOptions(method="fulltext"))["results"]] == ["beta.md"]
    out = small.query("상태", options=QueryOptions(method="fulltext"))
    assert [r["filepath"] for r in out["results"]] == ["beta.md"]


@pytest.mark.both_engines
def test_identifiers_search_as_phrases(small):
    out = small.query("snake_case_name", options=QueryOptions(limit=5))
    assert out["query"]["method"] == "keyword"
    assert [r["filepath"] for r in out["results"]] == ["gamma.md"]
    assert [r["filepath"] for r in small.query("App.tsx")["results"]] == ["gamma.md"]


@pytest.mark.both_engines
def test_user_quotes_make_a_phrase(small):
    out = small.query('"reward learning"', options=QueryOptions(method="fulltext", explain=True, record=False))
    assert out["query"]["explain"]["fulltext_terms"] == ["reward learning"]
    assert out["results"] == []            # the words occur, but never as that phrase
    assert small.query('"reinforcement learning"', options=QueryOptions(method="fulltext"))["count"] == 1


@pytest.mark.both_engines
def test_idf_floor_on_three_documents(small):
    """'learning' and 'notes' are in every document: FTS5 floors their IDF, yet results come back."""
    for text in ("learning", "notes", "learning notes"):
        out = small.query(text, options=QueryOptions(method="fulltext"))
        assert out["count"] == 3, text
        assert all(r["relevance_score"] > 0 for r in out["results"])
    mixed = small.query("learning reward", options=QueryOptions(method="fulltext"))["results"]
    assert mixed[0]["filepath"] == "alpha.md"
    assert len(mixed) == 3 and all(r["relevance_score"] > 0 for r in mixed)


def test_quote_and_build_query_units():
    assert quote('say "hi"') == '"say ""hi"""'
    q = build_query(["learning", "", "  ", "😀", "q learning", "learning"])
    assert q.terms == ("learning", "q learning", "learning")
    assert q.match == '"learning" OR "q learning" OR "learning"'
    assert not build_query([]) and not build_query(["!!!", "😀"])
    assert len(build_query([f"w{i}" for i in range(500)], max_terms=64).terms) == 64


def test_content_terms():
    words = parse_text("What is the state-of-the-art in Q-learning (RL)? NEAR title:foo").words
    assert content_terms(words) == ["state", "art", "q", "learning", "rl", "near", "title", "foo"]
    parsed = parse_text('find "exact phrase here" and more')
    assert parsed.phrases == ["exact phrase here"]
    assert [w.raw for w in parsed.words] == ["find", "and", "more"]
