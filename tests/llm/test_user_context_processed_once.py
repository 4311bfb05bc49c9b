"""A user context is bounded and processed once per call, not once per relation (issue 27 item 10).

Before: ``similar --user-context`` and ``query --context`` stemmed the whole user context again for every
relation they scored (through MCP, a 1 MB context took 104 s); nothing bounded its size. Now a context longer
than ``MAX_CONTEXT_CHARS`` is refused with ``invalid_input``, and its words are computed once. Counted
with a spy on the stemming function, no timing.
"""

from __future__ import annotations

import pytest
from fake_llm import FakeBackend

from kb_indexer.errors import ValidationError
from kb_indexer.limits import MAX_CONTEXT_CHARS
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.search.context_match import QueryContextScorer, similar_in_context
from kb_indexer.llm.structured import LLMClient
from kb_indexer.search import context as context_mod
from kb_indexer.store.similarities import neighbours
from kb_indexer.api import QueryOptions

NONE = LLMOptions(backend="none")


@pytest.fixture
def many_relations(similar_kb):
    """'reinforcement learning' with 60 relations (two LLM batches)."""
    for i in range(60):
        similar_kb.relate("reinforcement learning", f"topic number {i}", "related_concept", f"stored context {i}")
    return similar_kb


@pytest.fixture
def stem_calls(monkeypatch):
    """The texts the lexical rule stemmed, in order."""
    seen: list[str] = []
    real = context_mod.content_stems

    def spy(text):
        seen.append(text)
        return real(text)

    monkeypatch.setattr(context_mod, "content_stems", spy)
    return seen


def _context(tag: str, size: int = MAX_CONTEXT_CHARS) -> str:
    words = f"board game playing agents {tag} "
    return (words * (size // len(words) + 1))[:size]


def test_similar_stems_the_user_context_once_for_all_relations(many_relations, stem_calls):
    ctx = _context("similar-once")
    out = many_relations.similar("reinforcement learning", user_context=ctx, context_threshold=0.0, llm=NONE,
                                 limit=0)
    assert out["count"] >= 60
    assert stem_calls.count(ctx) == 1   # before: once per relation (60+)


def test_llm_batches_fall_back_with_one_stemming_of_the_context(many_relations, stem_calls):
    ctx = _context("llm-batches")
    fake = FakeBackend(["not json"] * 4)  # each batch: an answer and its repair, both unreadable
    client = LLMClient(resolve(LLMOptions(backend="fake", retries=0, no_cache=True)), backend=fake,
                       sleep=lambda s: None)
    kw = many_relations._keyword_row("reinforcement learning")
    rels = neighbours(many_relations.conn, kw["id"])
    out = similar_in_context(many_relations.conn, "reinforcement learning", rels, ctx, 0.0, client=client)
    assert len(fake.calls) == 4
    assert out["llm"]["batches"]["total"] == 2 and out["llm"]["batches"]["lexical"] == 2
    assert stem_calls.count(ctx) == 1


def test_query_context_stems_the_context_once(many_relations, stem_calls):
    ctx = _context("query-once")
    scorer = QueryContextScorer(many_relations.conn, NONE)
    try:
        out = many_relations.query("agents", ["reinforcement learning"], QueryOptions(context=ctx, record=False),
                                   context_scorer=scorer)
    finally:
        scorer.close()
    assert out["count"] > 0
    assert stem_calls.count(ctx) == 1


def test_a_one_megabyte_context_is_refused_before_any_work(many_relations, stem_calls):
    huge = _context("huge", 1024 * 1024)
    with pytest.raises(ValidationError, match=f"at most {MAX_CONTEXT_CHARS}"):
        many_relations.similar("reinforcement learning", user_context=huge, llm=NONE)
    with pytest.raises(ValidationError, match=f"at most {MAX_CONTEXT_CHARS}"):
        many_relations.query("agents", ["reinforcement learning"], options=QueryOptions(context=huge, record=False))
    assert stem_calls == []


def test_cli_refuses_an_oversized_context_as_invalid_input(similar_kb, run):
    res = run("similar", "reinforcement learning", "--user-context", "x" * (MAX_CONTEXT_CHARS + 1),
              "--llm-backend", "none", "--db", similar_kb.db_path, "--format", "json")
    assert res.returncode == 1 and res.stdout == ""
    err = res.error()
    assert err["code"] == "invalid_input" and str(MAX_CONTEXT_CHARS) in err["message"]
