"""Backend selection (flags > environment > .env > defaults) and lazy imports of the SDKs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.llm import config
from kb_indexer.llm.config import LLMOptions, is_configured, resolve

SDKS = ("ollama", "google.genai", "httpx", "httpx2", "dotenv")


def test_defaults():
    c = resolve()
    assert (c.backend, c.model, c.base_url, c.timeout, c.retries, c.use_cache) == (
        "ollama", "llama3.2:3b", "http://127.0.0.1:11434", 60.0, 2, True)
    assert c.sources == {"backend": "default", "model": "default", "url": "default"}
    assert not is_configured()


def test_environment_then_flags(monkeypatch):
    monkeypatch.setenv("KBINDEX_LLM_BACKEND", "openai")
    monkeypatch.setenv("KBINDEX_LLM_MODEL", "env-model")
    monkeypatch.setenv("KBINDEX_LLM_TIMEOUT", "5")
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    c = resolve()
    assert (c.backend, c.model, c.timeout, c.base_url) == ("openai", "env-model", 5.0, "http://127.0.0.1:9/v1")
    assert c.sources["backend"] == "env" and is_configured()
    c = resolve(LLMOptions(backend="Gemini", model="flag-model", timeout=2, no_cache=True))
    assert (c.backend, c.model, c.timeout, c.use_cache) == ("gemini", "flag-model", 2.0, False)
    assert c.sources["backend"] == "flag" and c.sources["model"] == "flag"
    assert not is_configured(LLMOptions(backend="none"))


def test_dotenv_in_the_current_directory_is_read_and_never_overrides(monkeypatch, tmp_path):
    monkeypatch.delenv("KBINDEX_NO_DOTENV")
    (tmp_path / ".env").write_text("KBINDEX_LLM_BACKEND=gemini\nGEMINI_API_KEY=from-dotenv\nKBINDEX_LLM_MODEL=dm\n")
    monkeypatch.chdir(tmp_path)  # ./.env only: a parent's is not read (tests/llm/test_env_file_cannot_load_code.py)
    monkeypatch.setenv("KBINDEX_LLM_MODEL", "env-wins")
    for name in ("KBINDEX_LLM_BACKEND", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    try:
        c = resolve()
        assert (c.backend, c.model, c.api_key) == ("gemini", "env-wins", "from-dotenv")
        assert c.sources["backend"] == ".env" and c.sources["api_key"] == "GEMINI_API_KEY (.env)"
        assert c.sources["model"] == "env" and c.sources["url"] == "default"
        assert c.env_file == str(tmp_path / ".env")
        assert "from-dotenv" not in repr(c) and c.describe()["api_key_set"] is True  # the key is never shown
    finally:
        import os
        for name in ("KBINDEX_LLM_BACKEND", "GEMINI_API_KEY"):
            os.environ.pop(name, None)
        config.reset_env_cache()


@pytest.mark.parametrize("opts, env", [
    (LLMOptions(backend="gpt"), {}),
    (LLMOptions(timeout=0), {}),
    (LLMOptions(), {"KBINDEX_LLM_TIMEOUT": "soon"}),
])
def test_bad_settings_are_usage_errors(monkeypatch, opts, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(UsageError):
        resolve(opts)


def test_an_unknown_backend_from_the_environment_disables_the_llm_and_says_why(monkeypatch):
    """Not bad usage (no flag was given): reported, and the LLM features fall back (see
    test_unknown_backend_from_settings_falls_back.py)."""
    monkeypatch.setenv("KBINDEX_LLM_BACKEND", "claude")
    config = resolve(LLMOptions())
    assert config.backend == "none" and not config.enabled
    assert "KBINDEX_LLM_BACKEND='claude' (from the environment)" in config.backend_error


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_cli_import_loads_no_sdk():
    loaded = _modules_after("import kb_indexer.cli")
    assert not [m for m in SDKS if m in loaded]


def test_search_command_loads_no_sdk(kb):
    code = (f"import sys\nsys.argv = ['kbindex', 'search', 'reinforcement learning', '--db', {str(kb.db_path)!r},"
            f" '--format', 'json']\nfrom kb_indexer.cli import app\ntry:\n    app()\nexcept SystemExit as e:\n"
            f"    assert e.code == 0, e.code")
    loaded = _modules_after(code)
    assert "kb_indexer.search.keyword" in loaded or "kb_indexer.api" in loaded
    assert not [m for m in SDKS if m in loaded]


def test_similar_without_context_loads_no_sdk(kb):
    code = (f"import sys\nsys.argv = ['kbindex', 'similar', 'RL', '--db', {str(kb.db_path)!r}, '--format', 'json']\n"
            f"from kb_indexer.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass")
    assert not [m for m in SDKS if m in _modules_after(code)]


def test_backend_modules_import_only_their_sdk():
    loaded = _modules_after("from kb_indexer.llm.config import resolve, LLMOptions\n"
                            "from kb_indexer.llm.registry import make_backend\n"
                            "make_backend(resolve(LLMOptions(backend='openai')))")
    assert "httpx" in loaded and "ollama" not in loaded and "google.genai" not in loaded
