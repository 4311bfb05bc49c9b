"""`query --context` with an LLM judging relations (scripted backend), and the lexical default."""

from __future__ import annotations

import json

from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.search.context_match import QueryContextScorer
from fake_llm import FakeBackend
from kb_indexer.llm.structured import LLMClient
from kb_indexer.search.query import run_query
from kb_indexer.api import QueryOptions


def _candidates(kb, question, context):
    seen = []
    run_query(kb.conn, question, ["reinforcement learning"],
              options=QueryOptions(context=context, record=False, threshold=0.1),
              context_scorer=lambda ctx, c: seen.extend(c) or [1.0] * len(c))
    return seen


def test_llm_scores_relations_once_per_hop_and_is_cached(kb):
    cands = _candidates(kb, "agents for board games", "game AI")
    assert cands, "the expansion must offer relations to judge"
    ratings = {str(i + 1): (100 if c["similarity_type"] == "application" else 0) for i, c in enumerate(cands)}

    def run(answers):
        fake = FakeBackend(list(answers))
        client = LLMClient(resolve(LLMOptions(backend="fake")), conn=kb.conn, backend=fake, sleep=lambda s: None)
        scorer = QueryContextScorer(kb.conn, client=client)
        out = run_query(kb.conn, "agents for board games", ["reinforcement learning"],
                        options=QueryOptions(context="game AI", threshold=0.1, explain=True, record=False),
                        context_scorer=scorer)
        out.update(scorer.report())
        return out, fake

    out, fake = run([ratings])
    assert len(fake.calls) == 1 and out["llm"]["used"] is True and out["llm"]["fallback"] is None
    exps = {e["keyword"]: e for e in out["query"]["explain"]["expansions"]}
    assert exps["alphago"]["context_match"] == 1.0
    assert exps["rl"]["context_match"] == 0.0
    assert exps["alphago"]["weight"] > exps["rl"]["weight"] * 0.5  # the fitting relation keeps more weight
    again, fake2 = run([])  # nothing queued: a second call would fail, so this must be a cache hit
    assert fake2.calls == [] and again["cache"]["hits"] == 1
    assert again["results"] == out["results"]


def test_llm_failure_falls_back_to_lexical_and_says_so(kb):
    from kb_indexer.llm.base import LLMUnavailable

    fake = FakeBackend([LLMUnavailable("down"), LLMUnavailable("down"), LLMUnavailable("down")])
    client = LLMClient(resolve(LLMOptions(backend="fake")), conn=kb.conn, backend=fake, sleep=lambda s: None)
    scorer = QueryContextScorer(kb.conn, client=client)
    out = run_query(kb.conn, "board games", ["reinforcement learning"],
                    options=QueryOptions(context="game AI", expand_depth=2, record=False), context_scorer=scorer)
    out.update(scorer.report())
    assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical" and "down" in out["llm"]["error"]
    assert out["count"] > 0


def test_cli_query_context_without_llm_reports_lexical(project, run):
    run("init", cwd=project)
    run("sync", cwd=project)
    res = run("query", "board game agents", "--context", "game AI", "-f", "json", cwd=project)
    assert res.returncode == 0, res.stderr
    data = res.json()
    assert data["llm"]["used"] is False and data["llm"]["fallback"] == "lexical"
    assert "warning" not in res.stderr  # not configured is not a failure


def test_cli_query_context_with_scripted_backend(project, run, tmp_path):
    run("init", cwd=project)
    run("sync", cwd=project)
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"error": "unavailable", "message": "no server"}] * 3))
    res = run("query", "board game agents", "-k", "reinforcement learning", "--context", "game AI",
              "--llm-backend", "fake", "-f", "json", cwd=project, env={"KBINDEX_FAKE_LLM": str(script)})
    assert res.returncode == 0, res.stderr
    data = res.json()
    assert data["llm"]["backend"] == "fake" and data["llm"]["used"] is False
    assert "not used" in res.stderr and data["count"] > 0
