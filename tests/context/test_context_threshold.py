"""Two thresholds with two meanings: the design's context threshold (0.7, on context-match scores, LLM or
lexical, real numbers) and the minimum expansion weight (0.35; ``--threshold`` is its older name)."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeBackend
from helpers import kw, write_doc
from kb_indexer.errors import UsageError
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.search.context_match import QueryContextScorer, schema_for
from kb_indexer.llm.structured import LLMClient
from kb_indexer.search.context import context_factor, lexical_score
from kb_indexer.api import QueryOptions

GAME_CONTEXT = ("AlphaGo is the best-known application of RL to game playing: a game AI that beat the world's "
                "best players in Go competitions")


@pytest.fixture
def games(small):
    k, root = small
    write_doc(root, "alphago.md", "# AlphaGo\n\nA Go program by DeepMind.\n", kw("AlphaGo", "AlphaGo"))
    write_doc(root, "rl.md", "# RL\n\nAgents learn from reward.\n", kw("RL", "RL", "reinforcement learning"))
    write_doc(root, "robots.md", "# Robots\n\nArms that grasp.\n", kw("robots", "robot control"))
    assert k.sync()["errors"] == []
    k.relate("RL", "AlphaGo", "application", GAME_CONTEXT, 0.6, directional=True)
    k.relate("RL", "reinforcement learning", "abbreviation", "In machine learning literature RL abbreviates "
             "reinforcement learning", 1.0)
    k.relate("RL", "robot control", "application", "Robot arms trained by trial and error", 0.6, directional=True)
    return k


def test_similar_finds_alphago_in_game_context_without_llm(games):
    out = games.similar("RL", user_context="game AI and competitions", llm=LLMOptions(backend="none"))
    assert [i["keyword"] for i in out["similar_keywords"]] == ["AlphaGo"]
    assert out["similar_keywords"][0]["context_match_score"] >= 0.7
    assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical"


def test_similar_cli_design_example(games, cli):
    res = cli("similar", "RL", "--user-context", "game AI and competitions", "--llm-backend", "none",
              "--db", str(games.db_path), "-f", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["count"] == 1 and data["similar_keywords"][0]["keyword"] == "AlphaGo"
    strict = json.loads(cli("similar", "RL", "--user-context", "game AI and competitions", "--llm-backend", "none",
                            "--context-threshold", "1.0", "--db", str(games.db_path), "-f", "json").stdout)
    assert strict["count"] == (1 if data["similar_keywords"][0]["context_match_score"] == 1.0 else 0)


def test_lexical_fit_uses_light_stemming():
    cand = {"keyword": "AlphaGo", "source": "RL", "similarity_type": "application", "context": GAME_CONTEXT}
    assert lexical_score("game AI and competitions", cand) == 1.0        # competitions ~ competitions
    assert lexical_score("gaming competitive", cand) == 1.0               # gaming ~ game, competitive ~ competition
    assert lexical_score("robot arms", cand) == 0.0


def test_context_factor_is_full_from_the_threshold():
    assert context_factor(0.75, 0.7) == 1.0 and context_factor(0.7, 0.7) == 1.0
    assert context_factor(0.0, 0.7) == 0.5
    assert context_factor(0.35, 0.7) == pytest.approx(0.75)
    assert context_factor(0.75, 0.9) == pytest.approx(0.5 + 0.5 * 0.75 / 0.9)
    assert context_factor(0.0, 0.0) == 1.0          # threshold 0: every relation fits


def _weights(k, **opts):
    out = k.query("board games", ["RL"], QueryOptions(context="game AI", explain=True, record=False, **opts),
                  context_scorer=lambda ctx, cands: [0.75] * len(cands))
    return {e["keyword"]: e for e in out["query"]["explain"]["expansions"]}, out


def test_query_context_threshold_applies_to_match_scores(games):
    fits, out = _weights(games, min_weight=0.0)
    assert out["query"]["context_threshold"] == 0.7 and out["query"]["min_weight"] == 0.0
    assert fits["alphago"]["weight"] == pytest.approx(0.5 * 0.6)     # 0.75 >= 0.7: full weight
    strict, out = _weights(games, min_weight=0.0, context_threshold=0.9)
    assert out["query"]["context_threshold"] == 0.9
    assert strict["alphago"]["weight"] == pytest.approx(0.5 * 0.6 * (0.5 + 0.5 * 0.75 / 0.9))


def test_min_weight_and_its_older_name(games):
    a = games.query("board games", ["RL"], options=QueryOptions(min_weight=0.5, record=False))
    b = games.query("board games", ["RL"], options=QueryOptions(threshold=0.5, record=False))
    assert a["query"]["min_weight"] == b["query"]["min_weight"] == b["query"]["threshold"] == 0.5
    assert a["results"] == b["results"]
    with pytest.raises(UsageError):
        games.query("board games", ["RL"], options=QueryOptions(min_weight=0.5, threshold=0.2, record=False))
    with pytest.raises(UsageError):
        games.query("board games", ["RL"], options=QueryOptions(context_threshold=1.5, record=False))


@pytest.mark.parametrize("flag", ["--min-weight", "--threshold", "-t"])
def test_cli_min_weight_names(games, cli, flag):
    res = cli("query", "board games", "-k", "RL", flag, "0.2", "--context-threshold", "0.8",
              "--db", str(games.db_path), "-f", "json")
    assert res.exit_code == 0, res.output
    q = json.loads(res.stdout)["query"]
    assert q["min_weight"] == q["threshold"] == 0.2 and q["context_threshold"] == 0.8


def test_refine_takes_both_thresholds(games, cli):
    games.query("board games", ["RL"], options=QueryOptions(context="game AI"))
    res = cli("refine", "--last", "-k", "AlphaGo", "--min-weight", "0.3", "--context-threshold", "0.6",
              "--db", str(games.db_path), "-f", "json")
    assert res.exit_code == 0, res.output
    q = json.loads(res.stdout)["query"]
    assert q["min_weight"] == 0.3 and q["context_threshold"] == 0.6


def test_llm_context_scores_are_real_numbers(games):
    schema = schema_for(2)
    assert schema["properties"]["1"] == {"type": "integer", "enum": list(range(101))}  # a percentage
    fake = FakeBackend([{"1": 92, "2": 13, "3": 41}])
    client = LLMClient(resolve(LLMOptions(backend="fake")), conn=games.conn, backend=fake, sleep=lambda s: None)
    scorer = QueryContextScorer(games.conn, client=client)
    out = games.query("board games", ["RL"],
                      QueryOptions(context="game AI and competitions", explain=True, record=False, min_weight=0.0),
                      context_scorer=scorer)
    matches = sorted(e["context_match"] for e in out["query"]["explain"]["expansions"])
    assert matches == [0.13, 0.41, 0.92]
    alphago = {e["keyword"]: e for e in out["query"]["explain"]["expansions"]}["alphago"]
    assert alphago["weight"] == pytest.approx(0.5 * 0.6)            # 0.92 >= 0.7: fits, full weight
    r = {r["filepath"]: r for r in out["results"]}["alphago.md"]
    assert "context match 0.92" in r["reasoning"]


def test_similar_with_llm_keeps_real_score(games):
    fake = FakeBackend([{"1": 92, "2": 20, "3": 10}])
    client = LLMClient(resolve(LLMOptions(backend="fake")), conn=games.conn, backend=fake, sleep=lambda s: None)
    from kb_indexer.search.context_match import similar_in_context
    from kb_indexer.store.similarities import neighbours

    rels = neighbours(games.conn, games._keyword_row("RL")["id"])
    out = similar_in_context(games.conn, "RL", rels, "game AI and competitions", client=client)
    assert out["llm"]["used"] is True
    assert [(i["context_match_score"]) for i in out["similar_keywords"]] == [0.92]


@pytest.mark.parametrize("flag", ["--context", "-c"])
def test_similar_takes_query_s_context_flag_too(games, cli, run, flag):
    args = ("similar", "RL", flag, "game AI and competitions", "--llm-backend", "none",
            "--db", str(games.db_path), "-f", "json")
    res = cli(*args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["user_context"] == "game AI and competitions" and data["similar_keywords"][0]["keyword"] == "AlphaGo"
    out = run(*args)
    assert out.returncode == 0 and out.json()["similar_keywords"] == data["similar_keywords"]
