"""Backends live in a small registry; plugins (and the tests' scripted double) register through
KBINDEX_LLM_PLUGINS; no test backend ships with kbindex (issue 8 scope)."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.llm import registry
from kb_indexer.llm.config import LLMOptions, resolve


def test_built_in_backends_and_defaults():
    assert registry.names()[:3] == ("ollama", "gemini", "openai")
    assert resolve(LLMOptions(backend="ollama")).model == "llama3.2:3b"
    assert resolve(LLMOptions(backend="openai")).model is None


def test_a_plugin_file_registers_a_backend(tmp_path, monkeypatch):
    plugin = tmp_path / "my_llm_plugin.py"
    plugin.write_text("from kb_indexer.llm.registry import register\n"
                      "register('echo', lambda config: ('echo', config.model), default_model='echo-1')\n")
    monkeypatch.setenv("KBINDEX_LLM_PLUGINS", str(plugin))
    try:
        config = resolve(LLMOptions(backend="echo"))
        assert config.model == "echo-1" and registry.make_backend(config) == ("echo", "echo-1")
    finally:
        registry.unregister("echo")


def test_a_broken_plugin_is_a_usage_error(tmp_path, monkeypatch):
    plugin = tmp_path / "broken_plugin.py"
    plugin.write_text("raise RuntimeError('nope')\n")
    monkeypatch.setenv("KBINDEX_LLM_PLUGINS", str(plugin))
    with pytest.raises(UsageError, match="broken_plugin"):
        registry.names()


def test_the_test_double_is_not_a_shipped_backend(similar_kb, run):
    res = run("similar", "reinforcement learning", "--user-context", "games", "--llm-backend", "fake",
              "--db", similar_kb.db_path, "--format", "json", env={"KBINDEX_LLM_PLUGINS": ""})
    assert res.returncode == 2 and res.error()["code"] == "usage" and "fake" in res.error()["message"]
    import kb_indexer.llm as pkg
    from pathlib import Path
    assert not (Path(pkg.__file__).parent / "fake.py").exists()
