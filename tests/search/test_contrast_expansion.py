"""contrast relations expand only for comparison questions (or when asked for with --types / --weight);
broader relations add general context at a low weight by default, ranked below direct matches."""

from __future__ import annotations

import json

import pytest

from helpers import kw, write_doc
from kb_indexer.search.expansion import is_comparison
from kb_indexer.api import QueryOptions


@pytest.mark.parametrize("question", [
    "supervised learning vs unsupervised learning", "RL vs. supervised learning", "RL versus supervised learning",
    "compare supervised learning and RL", "How does supervised learning compare?", "a comparison of paradigms",
    "What is the difference between supervised and unsupervised learning?", "How does RL differ from it?",
    "contrast supervised learning with RL", "지도 학습과 비지도 학습 비교", "지도 학습과 강화 학습의 차이는?",
])
def test_comparison_questions(question):
    assert is_comparison(question)


@pytest.mark.parametrize("question", [
    "How does AlphaGo work?", "supervised learning", "vsync tearing", "the compartment door", "image contrast",
    "versioning of datasets", "",
])
def test_other_questions(question):
    assert not is_comparison(question)


@pytest.fixture
def paradigms(small):
    k, root = small
    write_doc(root, "supervised.md", "# Supervised\n\nLearning from labels.\n", kw("supervised", "supervised learning"))
    write_doc(root, "unsupervised.md", "# Unsupervised\n\nFinding structure without labels.\n",
              kw("unsupervised", "unsupervised learning"))
    write_doc(root, "ml.md", "# Machine learning\n\nThe general field.\n", kw("ml", "machine learning"))
    assert k.sync()["errors"] == []
    k.relate("supervised learning", "unsupervised learning", "contrast",
             "Supervised uses labelled data, unsupervised finds structure without labels", 0.4)
    k.relate("supervised learning", "machine learning", "broader", "Supervised learning is a branch of machine "
             "learning", 0.7, directional=True)
    return k


def _found(out):
    return {r["filepath"]: r for r in out["results"]}


def test_contrast_does_not_expand_for_an_ordinary_question(paradigms):
    out = paradigms.query("how does supervised learning work",
                          options=QueryOptions(record=False, method="hybrid", explain=True))
    assert "unsupervised learning" not in out["query"]["expanded_keywords"]
    assert out["query"]["explain"]["comparison"] is False
    assert out["query"]["explain"]["type_weights"]["contrast"] == 0.0
    assert "unsupervised.md" not in _found(out)


def test_contrast_expands_for_a_comparison(paradigms):
    out = paradigms.query("how does supervised learning compare", options=QueryOptions(record=False, explain=True))
    assert out["query"]["explain"]["comparison"] is True
    assert out["query"]["expansion_map"]["supervised learning"][:1] == ["unsupervised learning"]
    found = _found(out)
    assert found["unsupervised.md"]["keyword_expansions"][0]["similarity_type"] == "contrast"
    assert found["unsupervised.md"]["source"] == "keyword_search"
    assert "contrast expansion" in found["unsupervised.md"]["reasoning"]
    assert out["results"][0]["filepath"] == "supervised.md"          # the direct match stays first


def test_contrast_on_request(paradigms, cli):
    out = paradigms.query("supervised learning", options=QueryOptions(types=["contrast"], record=False))
    assert out["query"]["expansion_map"]["supervised learning"] == ["unsupervised learning"]
    weighted = paradigms.query("supervised learning", options=QueryOptions(weights={"contrast": 0.9}, record=False))
    assert "unsupervised learning" in weighted["query"]["expanded_keywords"]
    res = cli("query", "supervised learning", "--types", "contrast", "--db", str(paradigms.db_path), "-f", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["query"]["expansion_map"]["supervised learning"] == ["unsupervised learning"]
    off = paradigms.query("supervised learning vs rules", options=QueryOptions(weights={"contrast": 0}, record=False))
    assert off["query"]["expansion_map"]["supervised learning"] == ["machine learning"]   # contrast off, broader on


def test_broader_adds_general_context_below_direct_matches(paradigms):
    out = paradigms.query("supervised learning", options=QueryOptions(record=False))
    assert "machine learning" in out["query"]["expansion_map"]["supervised learning"]
    found = _found(out)
    ml = found["ml.md"]
    assert ml["keyword_expansions"][0]["similarity_type"] == "broader"
    assert ml["keyword_expansions"][0]["weight"] == pytest.approx(0.35)
    assert ml["relevance_score"] < found["supervised.md"]["relevance_score"]
    assert [r["filepath"] for r in out["results"]].index("ml.md") > 0
