"""`doctor` never shows a placeholder such as `server-default@None` or "(server default) (from
default)" for the model: it names the model, or says why there is none (`model_label`)."""

from __future__ import annotations

import dataclasses
import json

from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.doctor import model_label
from kb_indexer.llm.structured import LLMClient


def test_model_label_rules():
    assert model_label("none", None, False) == "none (LLM disabled)"
    assert model_label("openai", None, True) == "not set (the openai server's default model answers)"
    assert model_label("ollama", "llama3.2:3b", True) == "llama3.2:3b"


def test_doctor_without_backend_says_llm_disabled(cli, tmp_path):
    res = cli("doctor", "--llm-backend", "none", "--no-roundtrip", "--db", tmp_path / "kbindex.db",
              "--format", "json")
    llm = json.loads(res.stdout)["llm"]
    assert llm["model"] is None and llm["model_label"] == "none (LLM disabled)"
    table = cli("doctor", "--llm-backend", "none", "--no-roundtrip", "--db", tmp_path / "kbindex.db").stdout
    assert "none (LLM disabled)" in table and "server default" not in table and "@None" not in table


def test_doctor_openai_without_model_names_the_server_default(cli, tmp_path, closed_port, monkeypatch):
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    res = cli("doctor", "--llm-backend", "openai", "--no-roundtrip", "--db", tmp_path / "kbindex.db",
              "--format", "json")
    llm = json.loads(res.stdout)["llm"]
    assert llm["model"] is None
    assert llm["model_label"] == "not set (the openai server's default model answers)"


def test_cache_key_model_without_url_is_never_at_none():
    config = dataclasses.replace(resolve(LLMOptions(backend="fake")), model=None, base_url=None)
    assert LLMClient(config)._cache_model() == "server-default@fake"
