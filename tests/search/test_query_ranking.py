"""Ranking sanity on the bundled KB and on tiny purpose-built ones; output shape; determinism."""

from __future__ import annotations

import json

import pytest
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines

EXACT_RL = {"ai-llm-vs-reinforcement-learning.md", "policy-gradient-methods.md", "reward-shaping.md",
            "temporal-difference-learning.md"}


def paths(out):
    return [r["filepath"] for r in out["results"]]


def by_path(out):
    return {r["filepath"]: r for r in out["results"]}


@pytest.mark.parametrize("call", [
    lambda kb: kb.query("reinforcement learning", options=QueryOptions(limit=20)),
    lambda kb: kb.query("Find documents about reinforcement learning", options=QueryOptions(limit=20)),
    lambda kb: kb.query("", ["reinforcement learning"], options=QueryOptions(limit=20)),
])
def test_design_example_reinforcement_learning(kb, call):
    out = call(kb)
    found = by_path(out)
    assert out["query"]["method"] == "hybrid"
    assert out["query"]["keywords"] in (["reinforcement learning"],)
    # tagged only "RL" / only "experience learning": found through the expansion
    assert "experience-based-learning.md" in found
    assert "trial-and-error-learning.md" in found
    assert found["trial-and-error-learning.md"]["keyword_expansions"][0] == {
        "original": "reinforcement learning", "expanded": "experience learning",
        "similarity_type": "related_concept", "weight": 0.45}
    assert "expansion" in found["experience-based-learning.md"]["sources"]
    assert {"original": "reinforcement learning", "expanded": "rl", "similarity_type": "abbreviation",
            "weight": 1.0} in found["experience-based-learning.md"]["keyword_expansions"]
    # exact matches first
    order = paths(out)
    assert set(order[:len(EXACT_RL)]) == EXACT_RL
    for p in EXACT_RL:
        assert "keyword" in found[p]["sources"] and "reinforcement learning" in found[p]["matched_keywords"]
    # contrast-only (supervised learning) is not returned; nor is the other paradigm
    assert "supervised-learning-basics.md" not in found
    assert "unsupervised-learning.md" not in found
    assert "supervised learning" not in out["query"]["expanded_keywords"]
    # alphago is an application at 0.6 x 0.5 = 0.3, under the default threshold
    assert "alphago" not in out["query"]["expansion_map"]["reinforcement learning"]


def test_direction_on_bundled_kb(kb):
    # reinforcement learning -> alphago (application, directional): lower the threshold and it expands...
    down = kb.query("", ["reinforcement learning"], options=QueryOptions(threshold=0.3))
    assert "alphago" in down["query"]["expansion_map"]["reinforcement learning"]
    assert "alphago-architecture.md" in paths(down)
    # ...but alphago never expands back to reinforcement learning
    up = kb.query("", ["alphago"], options=QueryOptions(threshold=0.0))
    assert "reinforcement learning" not in up["query"]["expansion_map"]["alphago"]


def test_known_multiword_keywords_found_in_question(kb):
    out = kb.query("How does monte carlo tree search pick moves in AlphaGo",
                   options=QueryOptions(method="hybrid", explain=True))
    assert out["query"]["keywords_from"] == "question"
    assert out["query"]["keywords"] == ["monte carlo tree search", "alphago"]
    terms = out["query"]["explain"]["fulltext_terms"]
    assert "monte carlo tree search" in terms and "monte" not in terms and "pick" in terms
    assert paths(out)[0] == "alphago-architecture.md"


def test_exact_outranks_expansion_with_equal_evidence(empty_kb):
    root = empty_kb.kb_root
    body = "Agents maximise return by trying actions.\n"
    (root / "a-expanded.md").write_text("---\nkeywords: [reinforcement learning]\n---\n# Note\n\n" + body)
    (root / "b-exact.md").write_text("---\nkeywords: [RL]\n---\n# Note\n\n" + body)
    (root / "c-contrast.md").write_text("---\nkeywords: [supervised learning]\n---\n# Note\n\n" + body)
    empty_kb.sync()
    empty_kb.relate("RL", "reinforcement learning", "synonym", "always", 1.0)
    empty_kb.relate("RL", "supervised learning", "contrast", "different paradigms", 1.0)
    out = empty_kb.query("agents", ["RL"], options=QueryOptions(method="hybrid"))
    assert paths(out) == ["b-exact.md", "a-expanded.md", "c-contrast.md"]   # c only by full text
    r = by_path(out)
    assert r["b-exact.md"]["relevance_score"] > r["a-expanded.md"]["relevance_score"]
    assert r["c-contrast.md"]["sources"] == ["fulltext"]
    keyword_only = empty_kb.query("", ["RL"], options=QueryOptions(method="keyword"))
    assert paths(keyword_only) == ["b-exact.md", "a-expanded.md"]           # contrast-only: not returned


def test_learned_tags_count_like_file_tags(empty_kb):
    root = empty_kb.kb_root
    (root / "one.md").write_text("# One\n\nNothing relevant here.\n")
    (root / "two.md").write_text("---\nkeywords: [bandits]\n---\n# Two\n\nNothing relevant here.\n")
    empty_kb.sync()
    c = empty_kb.conn
    kid = c.execute("SELECT id FROM keywords WHERE keyword = 'bandits'").fetchone()[0]
    doc = c.execute("SELECT id FROM documents WHERE filepath = 'one.md'").fetchone()[0]
    from kb_indexer.store.documents import refresh_fts_keywords

    with c:   # as the learning code does: the tag row, then the document's full-text keywords
        c.execute("INSERT INTO document_keywords (document_id, keyword_id, source) VALUES (?, ?, 'learned')",
                  (doc, kid))
        refresh_fts_keywords(c, doc)
    out = empty_kb.query("", ["bandits"], options=QueryOptions(method="keyword"))
    r = by_path(out)
    assert set(r) == {"one.md", "two.md"}
    assert r["one.md"]["relevance_score"] == r["two.md"]["relevance_score"]
    assert r["one.md"]["sources"] == r["two.md"]["sources"] == ["keyword", "fulltext"]


def test_untagged_corpus_hybrid_equals_fulltext(empty_kb):
    root = empty_kb.kb_root
    for i, text in enumerate(["wing lift at high speed", "heat transfer in slabs", "lift and drag of a wing",
                              "boundary layer transition", "wing flutter"]):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\n{text}\n")
    empty_kb.sync()
    q = "what is the lift of a wing"
    hy = empty_kb.query(q, options=QueryOptions(method="hybrid", limit=5))
    ft = empty_kb.query(q, options=QueryOptions(method="fulltext", limit=5))
    assert [(r["filepath"], r["relevance_score"]) for r in hy["results"]] == \
           [(r["filepath"], r["relevance_score"]) for r in ft["results"]]
    assert hy["results"][0]["relevance_score"] == 1.0


def test_fulltext_method_does_not_expand(kb):
    out = kb.query("reinforcement learning", options=QueryOptions(method="fulltext"))
    assert out["query"]["expansion_map"] == {"reinforcement learning": []}
    assert all(r["sources"] == ["fulltext"] for r in out["results"])
    assert "experience-based-learning.md" not in paths(out)   # only reachable through tags


def test_keyword_method_uses_identifiers_and_tags(kb):
    out = kb.query("How does AlphaGo work?", options=QueryOptions(method="keyword"))
    assert out["query"]["method"] == "keyword"
    assert "alphago" in out["query"]["keywords"]
    assert paths(out)[0] == "alphago-architecture.md"
    assert "keyword" in out["results"][0]["sources"]


RESULT_KEYS = {"filepath", "title", "summary", "matched_keywords", "user_keywords", "keyword_expansions",
               "relevance_score", "similarity", "sources", "source", "reasoning", "snippet"}
QUERY_KEYS = {"question", "keywords", "keywords_from", "expanded_keywords", "expansion_map", "context", "threshold",
              "min_weight", "context_threshold", "expand_depth", "method", "method_requested", "method_reason",
              "fallback"}


def test_output_shape(kb):
    out = kb.query("How does RL relate to AlphaGo?", ["RL", "AlphaGo"],
                   options=QueryOptions(context="game AI", limit=5))
    assert set(out) == {"query", "results", "count", "keyword_search_count", "grep_search_count", "total",
                        "query_id", "attempt_id", "llm", "semantic"}  # hybrid: "semantic" says why no vectors
    assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical"  # --context, no LLM configured
    assert set(out["query"]) == QUERY_KEYS
    q = out["query"]
    assert q["keywords"] == ["RL", "AlphaGo"] and q["keywords_from"] == "given"
    assert set(q["expansion_map"]) == {"rl", "alphago"}
    assert q["expanded_keywords"][:2] == ["rl", "alphago"]
    assert q["context"] == "game AI" and q["expand_depth"] == 1 and q["threshold"] == q["min_weight"] == 0.35
    assert q["context_threshold"] == 0.7
    assert out["count"] == len(out["results"]) and 0 < out["count"] <= 5
    assert out["total"] >= out["count"]
    scores = [r["relevance_score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)
    for r in out["results"]:
        assert set(r) == RESULT_KEYS
        assert 0.0 <= r["relevance_score"] <= 1.0
        assert r["sources"] and set(r["sources"]) <= {"keyword", "expansion", "fulltext"}
        assert set(r["user_keywords"]) <= {"rl", "alphago"}
        assert isinstance(r["snippet"], str) and r["snippet"]
    json.dumps(out)


def test_explain_parts(kb):
    out = kb.query("reinforcement learning", options=QueryOptions(explain=True, limit=3))
    ex = out["query"]["explain"]
    assert ex["type_weights"]["contrast"] == 0.0 and ex["fusion_weights"] == {"keyword": 0.6, "fulltext": 0.4}
    assert any(e["keyword"] == "rl" and e["similarity_type"] == "abbreviation" for e in ex["expansions"])
    for r in out["results"]:
        parts = r["score_parts"]
        w = parts["weights"]
        fused = w["keyword"] * parts["keyword"] + w["fulltext"] * parts["fulltext"]
        assert r["relevance_score"] == pytest.approx(fused, abs=2e-4)
        assert parts["evidence"]


def test_deterministic_and_ties_broken_by_filepath(empty_kb):
    root = empty_kb.kb_root
    for name in ("zeta.md", "alpha.md", "mid.md"):
        (root / name).write_text("---\nkeywords: [same]\n---\n# Same\n\nidentical text\n")
    empty_kb.sync()
    a = empty_kb.query("", ["same"], options=QueryOptions(record=False))
    b = empty_kb.query("", ["same"], options=QueryOptions(record=False))
    assert a == b
    assert paths(a) == ["alpha.md", "mid.md", "zeta.md"]
    assert len({r["relevance_score"] for r in a["results"]}) == 1


def test_limit_and_validation(kb):
    from kb_indexer.errors import UsageError

    assert kb.query("learning", options=QueryOptions(limit=1))["count"] == 1
    for bad in ({"limit": -1}, {"limit": 5000}, {"expand_depth": -1}, {"expand_depth": 9}, {"threshold": 1.5},
                {"method": "vector"}, {"types": ["bogus"]}, {"weights": {"contrast": 1.5}}):
        with pytest.raises(UsageError):
            kb.query("learning", options=QueryOptions(**bad))


def test_context_changes_expansion_weights(kb):
    plain = kb.query("", ["reinforcement learning"],
                     options=QueryOptions(explain=True, record=False))["query"]["explain"]["expansions"]
    ctx = kb.query("", ["reinforcement learning"], QueryOptions(context="sparse reward design", explain=True,
                                                                record=False))["query"]["explain"]["expansions"]
    p = {e["keyword"]: e["weight"] for e in plain}
    c = {e["keyword"]: e for e in ctx}
    assert all("context_match" in e for e in ctx)
    # the reward-shaping relation's context mentions sparse rewards: it keeps more of its weight
    assert c["reward shaping"]["context_match"] > 0
    assert c["reward shaping"]["weight"] / p["reward shaping"] > c["rl"]["weight"] / p["rl"]


def test_many_tagged_candidates_path_matches_per_row_path(empty_kb, monkeypatch):
    """Above PER_ROW_MAX tagged documents the full-text scores come from one pass; same ranking either way."""
    from kb_indexer.search import fulltext

    root = empty_kb.kb_root
    for i in range(30):
        tag = "common" if i % 3 else "rare"
        extra = " wing" * (i % 5)
        (root / f"d{i:02d}.md").write_text(f"---\nkeywords: [{tag}]\n---\n# Doc {i}\n\nlift{extra} drag {i}\n")
    empty_kb.sync()
    assert fulltext.PER_ROW_MAX < 20
    one_pass = empty_kb.query("wing lift", ["common"], options=QueryOptions(limit=12, record=False))
    monkeypatch.setattr(fulltext, "PER_ROW_MAX", 10_000)
    per_row = empty_kb.query("wing lift", ["common"], options=QueryOptions(limit=12, record=False))
    strip = lambda out: [(r["filepath"], r["relevance_score"], r["sources"]) for r in out["results"]]  # noqa: E731
    assert strip(one_pass) == strip(per_row)
    assert one_pass["count"] == 12
    assert [r["snippet"] for r in one_pass["results"]] == [r["snippet"] for r in per_row["results"]]


def test_quoted_known_keyword_is_a_keyword(kb):
    out = kb.query('"reinforcement learning" basics', options=QueryOptions(explain=True, record=False))
    assert out["query"]["keywords"] == ["reinforcement learning"]
    assert out["query"]["explain"]["fulltext_terms"] == ["reinforcement learning", "basics"]
    assert "experience-based-learning.md" in paths(out)
