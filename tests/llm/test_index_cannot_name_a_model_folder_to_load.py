"""A `kbindex.db` (a cloned repository may ship one; it is found by walking up) whose vectors were made with a
local model folder does not make a plain `query` load that folder: loading a sentence-transformers folder can
run code from it. The query runs lexically and says which folder the index names and how to allow it; naming
the folder now (`--embed-model`, or `KBINDEX_EMBED_MODEL` in the real environment) loads it.

The loader is a stand-in (no sentence-transformers needed): it records which folders would be loaded."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.llm import local_backend
from kb_indexer.llm.config import EmbedOptions
from kb_indexer.api import QueryOptions


class StandIn:
    """Looks like a SentenceTransformer: 3-dimensional vectors from the text's letters."""

    def encode(self, texts, batch_size, normalize_embeddings, convert_to_numpy, show_progress_bar):
        out = np.array([[t.count("a") + 1, t.count("e"), len(t)] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def loaded(monkeypatch):
    paths: list[str] = []
    monkeypatch.setattr(local_backend, "loader", lambda path: paths.append(path) or StandIn())
    monkeypatch.setattr(local_backend, "_models", {})
    for name in ("KBINDEX_EMBED_BACKEND", "KBINDEX_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return paths


@pytest.fixture
def shipped_index(tmp_path, loaded):
    """An index whose vectors were made with the model folder ./model (as if it came with a clone)."""
    folder = tmp_path / "model"
    folder.mkdir()
    write_doc(tmp_path / "kb", "a.md", "# Agents\n\nReinforcement learning trains agents with rewards.\n")
    kb, _ = KnowledgeBase.init(tmp_path / "kbindex.db", tmp_path / "kb")
    kb.sync()
    kb.embeddings.embed(embed=EmbedOptions(backend="local", model=str(folder)))
    kb.close()
    local_backend._models.clear()
    loaded.clear()
    return tmp_path / "kbindex.db", str(folder)


def test_a_plain_query_does_not_load_the_folder_the_index_names(shipped_index, loaded):
    db, folder = shipped_index
    kb = KnowledgeBase.open(db)
    try:
        out = kb.query("reinforcement agents")   # a plain query: auto uses the vectors when there are some
    finally:
        kb.close()
    assert loaded == []
    why = out["semantic"]["error"]
    assert folder in why and "--embed-model" in why and "KBINDEX_EMBED_MODEL" in why
    assert [r["filepath"] for r in out["results"]] == ["a.md"]   # lexical results still come


def test_naming_the_folder_now_loads_it(shipped_index, loaded, monkeypatch):
    db, folder = shipped_index
    kb = KnowledgeBase.open(db)
    try:
        kb.query("reinforcement agents", options=QueryOptions(method="semantic"), embed=EmbedOptions(model=folder))
        assert loaded == [folder]
        local_backend._models.clear()
        monkeypatch.setenv("KBINDEX_EMBED_MODEL", folder)
        kb.query("reinforcement learning agents", options=QueryOptions(method="semantic"))
    finally:
        kb.close()
    assert loaded == [folder, folder]
