"""One lexical context rule for every fallback, and a failed LLM batch falls back alone (issue 8 item 6)."""

from __future__ import annotations

from fake_llm import FakeBackend

from kb_indexer.search import context_match
from kb_indexer.llm.base import LLMUnavailable
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.search.context_match import QueryContextScorer, score_contexts, similar_in_context
from kb_indexer.llm.structured import LLMClient
from kb_indexer.search.context import lexical_scores
from kb_indexer.search.query import run_query
from kb_indexer.api import QueryOptions


def _client(conn, *answers):
    fake = FakeBackend(list(answers))
    return LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=conn, backend=fake,
                     sleep=lambda s: None), fake


def _expansions(out):
    return sorted((e["keyword"], e["weight"]) for e in out["query"]["explain"]["expansions"])


def test_stopword_context_gives_the_same_expansions_with_and_without_a_failed_llm(kb):
    # A context of stopwords only carries no information: the LLM-failure fallback must treat it as
    # the no-LLM path does (before: 9 expansions without an LLM, 1 when the LLM failed).
    args = QueryOptions(context="the of and", expand_depth=2, threshold=0.1, explain=True, record=False)
    plain = run_query(kb.conn, "board games", ["reinforcement learning"], args)
    client, fake = _client(kb.conn, LLMUnavailable("down"))
    scorer = QueryContextScorer(kb.conn, client=client)
    failed = run_query(kb.conn, "board games", ["reinforcement learning"], args, context_scorer=scorer)
    report = scorer.report()["llm"]
    assert report["used"] is False and report["fallback"] == "lexical" and "down" in report["error"]
    assert len(_expansions(plain)) > 1
    assert _expansions(failed) == _expansions(plain)


def test_similar_with_a_stopword_context_keeps_every_relation_in_the_fallback(similar_kb):
    from kb_indexer.store.similarities import neighbours

    kw = similar_kb._keyword_row("reinforcement learning")
    rels = neighbours(similar_kb.conn, kw["id"])
    client, _ = _client(similar_kb.conn, LLMUnavailable("down"))
    out = similar_in_context(similar_kb.conn, "reinforcement learning", rels, "the of and", 0.7, client=client)
    assert out["llm"]["fallback"] == "lexical" and out["count"] == len(rels) > 0


def _cands(n):
    return [{"id": i, "keyword": f"game k{i}", "source": "x", "similarity_type": "related_concept",
             "context": "board game agents" if i % 2 else "robots", "score": 0.5} for i in range(n)]


def test_a_failed_batch_falls_back_alone_and_the_report_says_so(empty_kb, monkeypatch):
    monkeypatch.setattr(context_match, "MAX_PER_CALL", 2)
    cands = _cands(6)
    bad = {"1": 950}   # not a percentage 0..100: invalid, and again after the repair attempt
    client, fake = _client(empty_kb.conn, {"1": 90, "2": 80}, bad, bad, {"1": 10, "2": 20})
    scores, info = score_contexts(empty_kb.conn, "board game", cands, client=client)
    lexical = dict(zip([c["id"] for c in cands], lexical_scores("board game", cands)))
    assert scores[0] == 0.9 and scores[1] == 0.8           # batch 1: the LLM's scores are kept
    assert scores[2] == lexical[2] and scores[3] == lexical[3]  # batch 2 failed: lexical
    assert scores[4] == 0.1 and scores[5] == 0.2           # batch 3: the LLM again
    assert info["llm"]["used"] is True and info["llm"]["fallback"] == "lexical" and info["llm"]["error"]
    assert info["llm"]["batches"] == {"total": 3, "llm": 2, "lexical": 1}
    assert len(fake.calls) == 4


def test_after_a_server_failure_later_batches_do_not_wait_for_it(empty_kb, monkeypatch):
    monkeypatch.setattr(context_match, "MAX_PER_CALL", 2)
    cands = _cands(6)
    client, fake = _client(empty_kb.conn, {"1": 90, "2": 80}, LLMUnavailable("gone"))
    scores, info = score_contexts(empty_kb.conn, "board game", cands, client=client)
    assert scores[0] == 0.9 and len(fake.calls) == 2       # the third batch was not sent
    assert info["llm"]["batches"] == {"total": 3, "llm": 1, "lexical": 2} and "gone" in info["llm"]["error"]
