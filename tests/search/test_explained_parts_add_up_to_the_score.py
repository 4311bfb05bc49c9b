"""`--explain` gives what makes each result's score: relevance_score = (sum of weights[c] x part[c] over the
channels + learned, never below 0) / scale + neighbours, with learned boosts (the divisor that keeps scores in [0, 1]),
with the neighbours step, with both, and with vectors; and the table output shows the parts too."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.search import neighbours
from tests.helpers import synced
from tests.search.test_best_results_are_judged_by_their_neighbours import DOCS, QUESTION


def recomputed(r: dict) -> float:
    p = r["score_parts"]
    fused = sum(p["weights"].get(c, 0.0) * p[c] for c in ("keyword", "fulltext", "dense"))
    return max(0.0, fused + p["learned"]) / p["scale"] + p.get("neighbours", 0.0)


def check(out: dict) -> None:
    assert out["results"]
    for r in out["results"]:
        assert r["relevance_score"] == pytest.approx(recomputed(r), abs=2e-4), r["score_parts"]


@pytest.fixture
def docs_kb(empty_kb):
    return synced(empty_kb, DOCS)


def _ask(docs_kb, **kw):
    return docs_kb.query(QUESTION, options=QueryOptions(explain=True, limit=0, record=False, **kw))


def _learn(docs_kb):
    res = docs_kb.query(QUESTION, options=QueryOptions(limit=5))
    docs_kb.learning.feedback(res["query_id"], ["cool3.md"], ["cool0.md"], attempt_id=res["attempt_id"])
    assert docs_kb.learning.learn()["summary"]["associations"] >= 2


def test_plain_scores_add_up_with_scale_one(docs_kb):
    out = _ask(docs_kb, method="fulltext")
    check(out)
    assert {r["score_parts"]["scale"] for r in out["results"]} == {1.0}


def test_learned_boosts_divide_every_score_by_the_scale(docs_kb):
    _learn(docs_kb)
    out = _ask(docs_kb, method="fulltext")
    check(out)
    top = out["results"][0]
    assert top["filepath"] == "cool3.md" and top["score_parts"]["learned"] > 0
    assert top["score_parts"]["scale"] == pytest.approx(1 + top["score_parts"]["learned"], abs=1e-4)
    assert next(r for r in out["results"] if r["filepath"] == "cool0.md")["score_parts"]["learned"] < 0


def test_neighbours_and_learned_boosts_together(docs_kb, monkeypatch):
    monkeypatch.setattr(neighbours, "NB_MIN_DOCS", 0)
    check(_ask(docs_kb, method="fulltext"))
    _learn(docs_kb)
    out = _ask(docs_kb, method="fulltext")
    check(out)
    assert all("neighbours" in r["score_parts"] for r in out["results"])
    assert out["results"][0]["score_parts"]["scale"] > 1 / (1 - neighbours.NB_WEIGHT)


def test_keyword_and_hybrid_methods_add_up_too(docs_kb):
    _learn(docs_kb)
    for method in ("keyword", "hybrid", "auto"):
        out = docs_kb.query(QUESTION, ["turbine"], options=QueryOptions(method=method, explain=True, limit=0,
                                                                  record=False))
        check(out)


def test_with_vectors(monkeypatch):
    pytest.importorskip("numpy")
    from tests.embed.test_semantic_search import FAKE
    from kb_indexer.api import KnowledgeBase
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        handle, _ = KnowledgeBase.init(Path(tmp) / "kbindex.db", Path(tmp) / "kb")
        synced(handle, DOCS)
        handle.embeddings.embed(embed=FAKE)
        out = handle.query(QUESTION, options=QueryOptions(method="hybrid", explain=True, limit=0, record=False))
        assert out["query"]["method"] == "hybrid"
        check(out)
        handle.close()


def test_the_table_shows_the_parts_with_explain(docs_kb, run):
    _learn(docs_kb)
    args = ("query", QUESTION, "--db", docs_kb.db_path, "--kb", docs_kb.kb_root, "--method", "fulltext")
    plain = run(*args, env={"COLUMNS": "250"})
    explained = run(*args, "--explain", env={"COLUMNS": "250"})
    assert plain.returncode == explained.returncode == 0, explained.stderr
    assert "score_parts" not in plain.stdout and "score_parts" in explained.stdout
    top = next(line for line in explained.stdout.splitlines() if "cool3.md" in line)
    assert "(fulltext 1 x 1.000 + learned 0." in top and ") / scale 1." in top


def test_a_document_pushed_to_zero_by_feedback_adds_up_with_neighbours(docs_kb, monkeypatch):
    monkeypatch.setattr(neighbours, "NB_MIN_DOCS", 0)
    for _ in range(4):
        res = docs_kb.query(QUESTION, options=QueryOptions(limit=0))
        docs_kb.learning.feedback(res["query_id"], [], ["a-kitchen.md"], attempt_id=res["attempt_id"])
    docs_kb.learning.learn()
    out = _ask(docs_kb, method="fulltext")
    check(out)
    kitchen = next(r for r in out["results"] if r["filepath"] == "a-kitchen.md")["score_parts"]
    fused = sum(kitchen["weights"].get(c, 0.0) * kitchen[c] for c in ("keyword", "fulltext", "dense"))
    assert fused + kitchen["learned"] < 0      # the clip at 0 comes before the neighbours' part
