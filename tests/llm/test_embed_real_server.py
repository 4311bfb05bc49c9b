"""`kbindex embed` and vector search against the real local model server the LLM tests use
(llama-cpp-python's OpenAI-compatible server with SmolLM2-135M, embeddings on), through the ``openai``
embedding backend: what a user of llama.cpp, vLLM or LM Studio gets. SmolLM2 is a chat model, not an
embedding model: these tests check the path end to end, not retrieval quality."""

from __future__ import annotations

import pytest

from kb_indexer.llm.config import EmbedOptions
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.real_model
OPENAI = EmbedOptions(backend="openai")


def test_embed_and_query_with_a_real_server(kb, llama_embed_server, monkeypatch):
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", llama_embed_server)
    n_docs = len(kb.list_docs()["documents"])
    first = kb.embeddings.embed(embed=OPENAI, batch=8)
    assert first["backend"] == "openai" and first["embedded"] == n_docs and first["dim"] == 576
    assert first["requests"] == -(-first["chunks"] // 8)            # full requests of 8
    assert first["coverage"]["without_vectors"] == 0 and first["coverage"]["with_vectors"] == n_docs
    again = kb.embeddings.embed(embed=OPENAI)
    assert again["embedded"] == 0 and again["unchanged"] == n_docs  # incremental: nothing changed
    out = kb.query("how do agents learn from rewards", options=QueryOptions(method="hybrid", record=False),
                   embed=OPENAI)
    assert out["semantic"]["used"] is True and out["query"]["fallback"] is None
    assert out["results"] and all(0.0 <= r["similarity"] <= 1.0 for r in out["results"])
    assert any("semantic" in r["sources"] for r in out["results"])


def test_a_server_started_for_chat_only_says_how_to_start_it_for_embeddings(kb, llama_server, monkeypatch):
    from kb_indexer.errors import KbError

    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", llama_server)
    monkeypatch.setenv("KBINDEX_LLM_RETRIES", "0")
    with pytest.raises(KbError) as failed:
        kb.embeddings.embed(embed=OPENAI, batch=8)
    assert "kbindex model serve --embedding" in failed.value.message
