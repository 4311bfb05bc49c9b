"""The Gemini API key never reaches another host through a redirect (issue 27 item 4).

Before: the google-genai SDK followed a 307 to another address and sent the ``x-goog-api-key`` header
there. Now the backend follows no redirect: the call fails with an error naming the redirect, the
LLM commands fall back, and the other server (another loopback port, recording every request's
path and headers) never receives the key, in a header or in the query.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.stress_llm import MODEL, STRESS_KEY, FaultServer, endpoint_env  # noqa: E402

from kb_indexer.api import KnowledgeBase  # noqa: E402
from kb_indexer.llm.base import LLMError  # noqa: E402
from kb_indexer.llm.config import EmbedOptions, LLMOptions, resolve_embed  # noqa: E402
from kb_indexer.llm.embedding import EmbedClient  # noqa: E402

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@pytest.fixture
def servers(monkeypatch):
    """(the configured server, which redirects everything; the other host it redirects to)"""
    other = FaultServer(lifetime=120)
    server = FaultServer(lifetime=120, redirect_to=other.url("ok"))
    for name, value in endpoint_env("gemini", server.url("redirect")).items():
        monkeypatch.setenv(name, value)
    yield server, other
    server.close()
    other.close()


def _key_leaked(other: FaultServer) -> list[dict]:
    return [r for r in other.seen if STRESS_KEY in r["path"] or STRESS_KEY in " ".join(r["headers"].values())]


def test_structured_call_does_not_follow_the_redirect(servers, make_client):
    server, other = servers
    client = make_client("gemini", model=MODEL, timeout=10, retries=0)
    with pytest.raises(LLMError) as caught:
        client.structured("t", [{"role": "user", "content": "ok?"}], SCHEMA, max_tokens=8, use_cache=False)
    assert _key_leaked(other) == [] and other.seen == []
    assert server.seen and server.seen[0]["headers"]["x-goog-api-key"] == STRESS_KEY  # it was sent, to its server
    assert "redirect" in caught.value.message


def test_embeddings_and_doctor_do_not_follow_the_redirect(servers, kb):
    server, other = servers
    client = EmbedClient(resolve_embed(EmbedOptions(backend="gemini", model=MODEL, timeout=10, retries=0)))
    try:
        with pytest.raises(LLMError, match="redirect"):
            client.embed(["alpha"])
    finally:
        client.close()
    report = KnowledgeBase.doctor(kb.db_path, LLMOptions(backend="gemini", model=MODEL, timeout=10))
    assert report["ok"] is False and "redirect" in report["llm"]["error"]
    assert len(server.seen) >= 2 and other.seen == []


def test_similar_falls_back_and_the_key_stays_home(servers, similar_kb):
    server, other = servers
    out = similar_kb.similar("reinforcement learning", user_context="game playing agents",
                             llm=LLMOptions(backend="gemini", model=MODEL, timeout=10, retries=0, no_cache=True))
    assert out["llm"]["fallback"] == "lexical" and "redirect" in out["llm"]["error"]
    assert server.seen and other.seen == []
