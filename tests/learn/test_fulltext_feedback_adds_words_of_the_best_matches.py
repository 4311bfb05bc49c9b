"""Pseudo-relevance feedback: on a large enough knowledge base, words shared by the best full-text matches
join the query (a second pass), so a document that uses those words but none of the question's is found;
its sources say ``feedback``, --explain lists the words, and user text stays data."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.search import feedback
from tests.helpers import synced

DOCS = {
    "cool1.md": "# Turbine blade cooling\n\nTurbine blade cooling with airfoil film holes and coolant plenum.\n",
    "cool2.md": "# Cooling of turbine blades\n\nBlade cooling: the airfoil coolant film protects the blade.\n",
    "cool3.md": "# Turbine cooling\n\nInternal cooling passages of the turbine airfoil carry coolant.\n",
    "film.md": "# Film effectiveness\n\nAirfoil coolant film effectiveness measured on a cascade.\n",
    "other.md": "# Boundary layers\n\nLaminar boundary layer transition on a flat plate.\n",
    "noise.md": "# Jet noise\n\nJet noise of supersonic exhausts and shock cells.\n",
}


@pytest.fixture
def docs_kb(empty_kb):
    return synced(empty_kb, DOCS)


@pytest.fixture
def feedback_on(monkeypatch):
    monkeypatch.setattr(feedback, "FB_MIN_DOCS", 0)   # this small knowledge base counts as large enough


def _paths(out):
    return [r["filepath"] for r in out["results"]]


def test_small_knowledge_base_gets_no_feedback(docs_kb):
    out = docs_kb.query("turbine blade cooling", options=QueryOptions(prf=True, method="fulltext", explain=True, record=False))
    assert "film.md" not in _paths(out)
    assert out["query"]["explain"]["fulltext_feedback"] == []
    assert all("feedback" not in r["sources"] for r in out["results"])


@pytest.mark.parametrize("method", ["fulltext", "hybrid"])
def test_document_with_the_best_matches_words_is_found_and_says_feedback(docs_kb, feedback_on, method):
    out = docs_kb.query("turbine blade cooling", options=QueryOptions(prf=True, method=method, explain=True, record=False))
    words = [w["term"] for w in out["query"]["explain"]["fulltext_feedback"]]
    assert "airfoil" in words and "coolant" in words
    assert not {"turbine", "blade", "cooling"} & set(words)        # the question's own words are not added
    paths = _paths(out)
    assert "film.md" in paths
    assert paths.index("film.md") > max(paths.index(p) for p in ("cool1.md", "cool2.md", "cool3.md"))
    film = out["results"][paths.index("film.md")]
    assert film["sources"] == ["fulltext", "feedback"]
    assert film["source"] == "grep_search"
    assert "other.md" not in paths and "noise.md" not in paths


def test_keyword_method_is_exact_and_gets_no_feedback(docs_kb, feedback_on):
    out = docs_kb.query("turbine", options=QueryOptions(prf=True, method="keyword", explain=True, record=False))
    assert out["query"]["explain"]["fulltext_feedback"] == []


@pytest.mark.parametrize("text", ['"turbine" NEAR(cooling', "cooling* OR title:blade", "'; DROP TABLE documents; --"])
def test_question_syntax_stays_data_with_feedback(docs_kb, feedback_on, text):
    out = docs_kb.query(text, options=QueryOptions(prf=True, method="fulltext", record=False))
    assert isinstance(out["results"], list)


def test_limit_gives_the_first_results_of_a_larger_limit(docs_kb, feedback_on):
    full = _paths(docs_kb.query("turbine blade cooling", options=QueryOptions(prf=True, method="fulltext", limit=0, record=False)))
    for n in (1, 2, 3):
        out = docs_kb.query("turbine blade cooling", options=QueryOptions(prf=True, method="fulltext", limit=n, record=False))
        assert _paths(out) == full[:n]


def test_sparse_index_ranks_with_feedback_like_fts5(empty_kb, feedback_on, monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")     # the sparse index is kept and read
    for name, text in DOCS.items():
        (empty_kb.kb_root / name).write_text(text, encoding="utf-8")
    result = empty_kb.sync()
    assert result["errors"] == [] and result["fulltext_index"]["built"]
    options = QueryOptions(prf=True, method="fulltext", limit=0, explain=True, record=False)
    with_index = empty_kb.query("turbine blade cooling", options=options)
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "1000000")   # FTS5 alone
    fts5 = empty_kb.query("turbine blade cooling", options=options)
    assert "film.md" in _paths(with_index)
    assert with_index["query"]["explain"]["fulltext_feedback"] == fts5["query"]["explain"]["fulltext_feedback"]
    assert [(r["filepath"], r["relevance_score"], r["sources"]) for r in with_index["results"]] == \
        [(r["filepath"], r["relevance_score"], r["sources"]) for r in fts5["results"]]
    assert [r["score_parts"]["bm25"] for r in with_index["results"]] == pytest.approx(
        [r["score_parts"]["bm25"] for r in fts5["results"]], rel=1e-6)


def test_feedback_is_off_unless_asked_for(docs_kb):
    """Off by default: on Cranfield it helped, on the held-out collections it did not (and it halves queries/s)."""
    out = docs_kb.query("turbine blade cooling", options=QueryOptions(method="fulltext", explain=True, record=False))
    assert all("feedback" not in r["sources"] for r in out["results"])
    assert out["query"]["explain"]["fulltext_feedback"] == []
