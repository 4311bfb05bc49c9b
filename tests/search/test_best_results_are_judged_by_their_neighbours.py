"""Score regularisation (search/neighbours.py): on a large enough knowledge base, each of the best results is
judged by the results most like it too. Of two documents the question's words match equally, the one that
resembles the other good matches ranks first; --explain says what the neighbours gave; the order and the
[0, 1] range of scores hold; an edited document is read again; exact (keyword) matching is left alone; and
both engines give the same ranking."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.search import neighbours
from tests.helpers import synced

QUESTION = "turbine blade cooling"
CLUSTER = "film holes coolant plenum airfoil heat transfer coefficient"
DOCS = {
    **{f"cool{i}.md": f"# Turbine blade cooling {i}\n\nTurbine blade cooling with {CLUSTER} number {i}.\n"
       for i in range(6)},
    # the same question words once each, and the same length; only their other words differ
    "a-kitchen.md": "# Notes\n\nCooling of a kitchen refrigerator with shelves drawers doors lights food.\n",
    "z-airfoil.md": "# Notes\n\nCooling of a plenum airfoil with film holes coolant heat transfer.\n",
    **{f"other{i}.md": f"# Boundary layer {i}\n\nLaminar boundary layer transition on a flat plate {i}.\n"
       for i in range(4)},
}


@pytest.fixture
def docs_kb(empty_kb):
    return synced(empty_kb, DOCS)


@pytest.fixture
def large(monkeypatch):
    monkeypatch.setattr(neighbours, "NB_MIN_DOCS", 0)   # this small knowledge base counts as large enough


def _ask(docs_kb, method="fulltext", limit=0, explain=True):
    return docs_kb.query(QUESTION, options=QueryOptions(method=method, limit=limit, explain=explain, record=False))


def _paths(out):
    return [r["filepath"] for r in out["results"]]


def test_of_two_equal_matches_the_one_like_the_best_results_ranks_first(docs_kb, large):
    out = _ask(docs_kb)
    paths = _paths(out)
    assert paths.index("z-airfoil.md") < paths.index("a-kitchen.md")
    parts = {r["filepath"]: r["score_parts"] for r in out["results"]}
    assert parts["z-airfoil.md"]["bm25"] == pytest.approx(parts["a-kitchen.md"]["bm25"])
    assert parts["z-airfoil.md"]["neighbours"] > parts["a-kitchen.md"]["neighbours"] >= 0


def test_without_it_the_equal_matches_tie_and_go_by_path(docs_kb, large, monkeypatch):
    monkeypatch.setattr(neighbours, "NB_WEIGHT", 0.0)
    paths = _paths(_ask(docs_kb))
    assert paths.index("a-kitchen.md") < paths.index("z-airfoil.md")


def test_explain_says_what_ran(docs_kb, large):
    out = _ask(docs_kb)
    hood = out["query"]["explain"]["neighbourhood"]
    assert hood == {"documents": len(out["results"]), "neighbours": neighbours.NB_NEIGHBOURS,
                    "weight": neighbours.NB_WEIGHT, "words": neighbours.NB_TERMS}
    assert all("neighbours" in r["score_parts"] for r in out["results"])


def test_scores_stay_ordered_and_within_one(docs_kb, large, monkeypatch):
    monkeypatch.setattr(neighbours, "NB_DOCS", 6)        # the rest are beyond the documents compared
    out = _ask(docs_kb)
    scores = [r["relevance_score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)
    compared = [r for r in out["results"] if r["score_parts"]["neighbours"] > 0]
    rest = [r for r in out["results"][6:]]
    assert compared and rest
    assert all(r["score_parts"]["neighbours"] == 0 for r in rest)
    assert min(r["relevance_score"] for r in out["results"][:6]) >= max(r["relevance_score"] for r in rest)


def test_limit_gives_the_first_results_of_a_larger_limit(docs_kb, large, monkeypatch):
    monkeypatch.setattr(neighbours, "NB_DOCS", 7)   # more than the smaller limits below: they compare as many
    full = _ask(docs_kb)
    assert full["query"]["explain"]["neighbourhood"]["documents"] >= 7     # and any tied with the 7th
    for n in (1, 3, 7, 9):
        out = _ask(docs_kb, limit=n)
        assert _paths(out) == _paths(full)[:n]
        assert out["query"]["explain"]["neighbourhood"] == full["query"]["explain"]["neighbourhood"]
        assert [r["relevance_score"] for r in out["results"]] == [r["relevance_score"] for r in full["results"][:n]]


def test_copies_tied_at_the_cut_are_all_compared_and_ordered_by_path(empty_kb, large, monkeypatch):
    monkeypatch.setattr(neighbours, "NB_DOCS", 6)
    copy = "# Turbine blade cooling\n\nTurbine blade cooling with film holes.\n"
    synced(empty_kb, {**{f"d{i}.md": copy for i in range(8)},
                      **{f"other{i}.md": f"# Plate {i}\n\nCooling of a flat plate {i}.\n" for i in range(4)}})
    synced(empty_kb, {"a.md": copy})             # the same text, synced last: the largest id
    out = _ask(empty_kb)
    copies = [r for r in out["results"] if r["filepath"] in {"a.md", *(f"d{i}.md" for i in range(8))}]
    assert [r["filepath"] for r in copies] == ["a.md"] + [f"d{i}.md" for i in range(8)]
    assert len({r["relevance_score"] for r in copies}) == 1
    assert out["query"]["explain"]["neighbourhood"]["documents"] == 9


def test_an_edited_document_is_read_again(docs_kb, large):
    before = {r["filepath"]: r["score_parts"]["neighbours"] for r in _ask(docs_kb)["results"]}
    (docs_kb.kb_root / "a-kitchen.md").write_text(
        "# Notes\n\nCooling of a plenum airfoil with film holes coolant heat transfer.\n", encoding="utf-8")
    assert docs_kb.sync()["errors"] == []
    after = {r["filepath"]: r["score_parts"]["neighbours"] for r in _ask(docs_kb)["results"]}
    assert after["a-kitchen.md"] > before["a-kitchen.md"]
    assert after["a-kitchen.md"] == pytest.approx(after["z-airfoil.md"])


def test_a_renamed_document_is_read_again(empty_kb, large):
    """A document without a heading takes its title from its file name, which its content does not hold: renamed,
    its words and so its neighbours change (the same length of name, the same id)."""
    synced(empty_kb, {
        **{f"blade{i}.md": f"# Turbine blade cooling {i}\n\nTurbine blade cooling: film holes, coolant, airfoil.\n"
           for i in range(6)},
        **{f"fridge{i}.md": f"# Kitchen refrigerator {i}\n\nCooling of a kitchen refrigerator with shelves.\n"
           for i in range(6)},
        "kitchen-refrigerator-shelves.md": "Cooling notes.\n"})
    before = {r["filepath"]: r["score_parts"]["neighbours"] for r in _ask(empty_kb)["results"]}
    (empty_kb.kb_root / "kitchen-refrigerator-shelves.md").rename(empty_kb.kb_root / "airfoil-coolant-film-plenums.md")
    assert empty_kb.sync()["errors"] == []
    after = {r["filepath"]: r["score_parts"]["neighbours"] for r in _ask(empty_kb)["results"]}
    assert after["airfoil-coolant-film-plenums.md"] > before["kitchen-refrigerator-shelves.md"] * 1.2
    assert after["airfoil-coolant-film-plenums.md"] == pytest.approx(max(after[f"blade{i}.md"] for i in range(6)), rel=0.2)


def test_a_document_feedback_lifted_lifts_the_documents_like_it(empty_kb, large):
    """Two pairs built alike (a document and one like it, in two vocabularies): feedback on one document of the
    first pair lifts its twin above the second pair's, which tied with it before."""
    pairs = {"b1.md": "film holes coolant airfoil plenum", "y1.md": "film holes coolant airfoil plenum",
             "b2.md": "fins ducts radiator louvre manifold", "y2.md": "fins ducts radiator louvre manifold"}
    synced(empty_kb, {**{p: f"# Notes\n\nTurbine blade cooling with {words}.\n" if p[0] == "b" else
                         f"# Notes\n\nCooling with {words} here.\n" for p, words in pairs.items()},
                      **{f"other{i}.md": f"# Plate {i}\n\nCooling of a flat plate, case {i}.\n" for i in range(6)}})
    scores = {r["filepath"]: r["relevance_score"] for r in _ask(empty_kb)["results"]}
    assert scores["y1.md"] == scores["y2.md"]
    asked = empty_kb.query(QUESTION, options=QueryOptions(method="fulltext", limit=20))
    empty_kb.learning.feedback(asked["query_id"], ["b1.md"], [], attempt_id=asked["attempt_id"])
    assert empty_kb.learning.learn()["summary"]["associations"] == 1
    after = {r["filepath"]: r for r in _ask(empty_kb)["results"]}
    assert after["b1.md"]["score_parts"]["learned"] > 0 and after["y1.md"]["score_parts"]["learned"] == 0
    assert after["y1.md"]["relevance_score"] > after["y2.md"]["relevance_score"]


def test_small_knowledge_base_and_exact_matching_are_left_alone(docs_kb, large, monkeypatch):
    out = _ask(docs_kb, method="keyword")
    assert out["query"]["explain"]["neighbourhood"] is None
    assert all("neighbours" not in r["score_parts"] for r in out["results"])
    monkeypatch.setattr(neighbours, "NB_MIN_DOCS", 500)
    out = _ask(docs_kb)
    assert out["query"]["explain"]["neighbourhood"] is None
    assert all("neighbours" not in r["score_parts"] for r in out["results"])


@pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)
def test_postgres_ranks_like_sqlite(docs_kb, large, tmp_path):
    from kb_indexer.api import KnowledgeBase

    root = tmp_path / "lite"
    (root / "knowledge-base").mkdir(parents=True)
    lite, _ = KnowledgeBase.init(root / "kbindex.db", root / "knowledge-base")
    try:
        pg, sq = _ask(docs_kb), _ask(synced(lite, DOCS))
        assert _paths(pg) == _paths(sq)
        assert [r["score_parts"]["neighbours"] for r in pg["results"]] == \
            pytest.approx([r["score_parts"]["neighbours"] for r in sq["results"]])
    finally:
        lite.close()
