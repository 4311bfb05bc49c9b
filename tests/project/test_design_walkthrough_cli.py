"""The design's walk-through (kbindex-design.md, "User Workflow" and the search / similar examples), run
literally with the installed `kbindex` command on a copy of the bundled knowledge base: every step's exit
code and the fields an agent reads. docs/design.md ("Walk-through") shows the same session."""

from __future__ import annotations

import pytest

HELPFUL = ["alphago-architecture.md", "monte-carlo-tree-search.md"]
FINDERS = {"keyword", "expansion", "learned"}


@pytest.fixture
def walk(project, run):
    env = {"KBINDEX_LLM_BACKEND": "none"}  # the deterministic path: no model server in this test

    def kbindex(*args: str):
        result = run(*args, cwd=project, env=env)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result
    kbindex("init")
    kbindex("sync")
    return kbindex


def _check_sources(out: dict) -> None:
    """`source` (the design's) agrees with `sources` (the provenance), and the counts add up."""
    for r in out["results"]:
        assert r["source"] == ("keyword_search" if FINDERS & set(r["sources"]) else "grep_search"), r
        assert r["reasoning"].strip()
    assert out["keyword_search_count"] == sum(r["source"] == "keyword_search" for r in out["results"])
    assert out["keyword_search_count"] + out["grep_search_count"] == out["count"]


def test_the_user_workflow_runs_as_the_design_shows(walk):
    first = walk("query", "How does AlphaGo work?", "--keywords", "game AI", "--context", "board games",
                 "--format", "json").json()
    assert first["query_id"] == 1 and first["results"]
    assert first["query"]["method"] == "hybrid"  # "AlphaGo" is a name in a question, not an identifier
    _check_sources(first)

    assert '[1] "How does AlphaGo work?" (1 attempt, just now)' in walk("history").stdout

    refined = walk("refine", "1", "--keywords", "AlphaGo", "Monte Carlo", "neural networks", "--format", "json").json()
    assert set(HELPFUL) <= {r["filepath"] for r in refined["results"][:2]}
    _check_sources(refined)
    assert '(2 attempts, just now)' in walk("history").stdout

    marked = walk("feedback", "1", "--helpful", HELPFUL[0], "--helpful", HELPFUL[1], "--format", "json").json()
    assert sorted(r["filepath"] for r in marked["recorded"]) == HELPFUL
    # A second question used "Monte Carlo" for the same documents: two queries are the learner's evidence.
    second = walk("query", "Which search did AlphaGo use to pick its moves?", "--keywords", "Monte Carlo",
                  "game AI", "--format", "json").json()
    walk("feedback", str(second["query_id"]), "--helpful", HELPFUL[0], "--helpful", HELPFUL[1])

    plan = walk("learn", "--dry-run").stdout
    assert "Analyzing 4 unprocessed feedback entries from 2 queries" in plan
    assert 'Keyword Augmentation:' in plan and 'Add keyword "monte carlo" to monte-carlo-tree-search.md' in plan
    assert "Dry run: nothing written." in plan
    applied = walk("learn").stdout
    assert "Applied" in applied and "Marked 4 feedback entries as processed." in applied

    tagged = walk("keywords", "alphago-architecture.md", "--format", "json").json()
    assert "monte carlo" in {k["keyword"].lower() for k in tagged["keywords"]}  # learned, so found by tags now
    again = walk("query", "How does AlphaGo work?", "--format", "json").json()
    assert [r["filepath"] for r in again["results"][:2]] == HELPFUL
    assert "learned association" in again["results"][0]["reasoning"]
    _check_sources(again)


def test_the_search_and_similar_examples(walk):
    rl = walk("search", "reinforcement learning", "--format", "json").json()
    assert "ai-llm-vs-reinforcement-learning.md" in {r["filepath"] for r in rl["results"]}
    similar = walk("similar", "reinforcement learning", "--format", "json").json()
    kinds = {(s["keyword"].lower(), s["similarity_type"]) for s in similar["similar_keywords"]}
    assert {("rl", "abbreviation"), ("experience learning", "related_concept")} <= kinds
    wider = walk("search", "reinforcement learning", "RL", "experience learning", "--or", "--format", "json").json()
    assert len(wider["results"]) > len(rl["results"])  # the expansion the design's step 4 shows

    fitted = walk("similar", "RL", "--user-context", "game AI and competitions", "--format", "json").json()
    assert [s["keyword"].lower() for s in fitted["similar_keywords"]] == ["alphago"]
    assert fitted["similar_keywords"][0]["similarity_type"] == "application"
    assert fitted["llm"]["used"] is False and fitted["llm"]["fallback"] == "lexical"  # said, not hidden


def test_a_comparison_question_may_use_contrast_relations(walk):
    compared = walk("query", "supervised learning vs reinforcement learning", "--format", "json").json()
    plain = walk("query", "reinforcement learning for robots", "--format", "json").json()

    def types(out):
        return {e["similarity_type"] for r in out["results"] for e in r.get("keyword_expansions", [])}
    assert "contrast" in types(compared)
    assert "contrast" not in types(plain)
