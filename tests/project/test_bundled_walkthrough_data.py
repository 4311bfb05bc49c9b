"""The bundled knowledge base holds what the design's walk-through and examples use: the documents
the user workflow marks helpful, "game AI", MCTS, the RL -> AlphaGo application relation with a game-AI
context, and the search / similar examples' documents and relations."""

from __future__ import annotations

import json

from tests.conftest import BUNDLED_KB, BUNDLED_SIMILARITIES
from kb_indexer.api import QueryOptions


def test_bundled_counts(kb):
    assert len(kb.list_docs()["documents"]) == 18
    assert len(json.loads(BUNDLED_SIMILARITIES.read_text(encoding="utf-8"))["similarities"]) == 72
    assert sorted(p.name for p in BUNDLED_KB.glob("*.md")).count("monte-carlo-tree-search.md") == 1


def test_user_workflow_runs_on_the_bundled_kb(kb):
    first = kb.query("How does AlphaGo work?", ["game AI"], options=QueryOptions(context="board games"))
    assert first["results"], "the first attempt finds something"
    qid = first["query_id"]
    refined = kb.learning.refine(qid, ["AlphaGo", "Monte Carlo", "neural networks"])
    found = [r["filepath"] for r in refined["results"]]
    assert {"alphago-architecture.md", "monte-carlo-tree-search.md"} <= set(found)
    marked = kb.learning.feedback(qid, ["alphago-architecture.md", "monte-carlo-tree-search.md"], [])
    assert len(marked["recorded"]) == 2
    history = kb.learning.history()["queries"][0]
    assert history["attempts"] == 2 and history["feedback"] == 2
    learned = kb.learning.learn()
    assert learned["marked_processed"] == 2 and learned["summary"]["total"] >= 1


def test_design_search_and_similar_examples(kb):
    found = {r["filepath"] for r in kb.search(["reinforcement learning", "RL", "experience learning"], mode="or")["results"]}
    assert {"ai-llm-vs-reinforcement-learning.md", "experience-based-learning.md", "trial-and-error-learning.md"} <= found
    similar = {(s["keyword"].lower(), s["similarity_type"]) for s in kb.similar("reinforcement learning")["similar_keywords"]}
    assert {("rl", "abbreviation"), ("experience learning", "related_concept"), ("alphago", "application"),
            ("supervised learning", "contrast")} <= similar


def test_rl_alphago_application_is_about_game_ai_and_competitions(kb):
    rel = [s for s in kb.similar("RL")["similar_keywords"] if s["keyword"].lower() == "alphago"]
    assert len(rel) == 1 and rel[0]["similarity_type"] == "application" and rel[0]["direction"] == "outgoing"
    assert "game AI" in rel[0]["context"] and "competitions" in rel[0]["context"]
    tagged = {k["keyword"].lower() for k in kb.keywords("monte-carlo-tree-search.md")["keywords"]}
    assert {"game ai", "mcts", "monte carlo tree search", "alphago"} <= tagged
