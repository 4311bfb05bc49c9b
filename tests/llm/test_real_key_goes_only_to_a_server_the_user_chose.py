"""A key from the real environment goes only to a server the user chose: one whose URL they set (flag or real
environment), or the default server of a backend they chose (flag or real environment). A `.env` or an index
that only picks the backend does not send the key to the default plain-HTTP local port (any local user can
listen there). Gemini's default is Google's own https endpoint: the key goes there whoever picked Gemini."""

from __future__ import annotations

import os

import pytest

from kb_indexer.llm import config
from kb_indexer.llm.base import LLMConfigError
from kb_indexer.llm.config import EmbedOptions, LLMOptions, resolve, resolve_embed
from kb_indexer.llm.registry import make_backend

SECRET = "sk-REAL"
LOCAL = [("openai", "OPENAI_API_KEY"), ("ollama", "OLLAMA_API_KEY")]


@pytest.fixture
def dotenv_on(monkeypatch, tmp_path):
    monkeypatch.delenv("KBINDEX_NO_DOTENV", raising=False)
    monkeypatch.delenv("KBINDEX_ENV_FILE", raising=False)
    for name in ("KBINDEX_LLM_BACKEND", "KBINDEX_EMBED_BACKEND", "KBINDEX_OPENAI_BASE_URL", "OLLAMA_HOST",
                 "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    before = set(os.environ)
    config.reset_env_cache()
    yield tmp_path
    for name in set(os.environ) - before:
        os.environ.pop(name)
    config.reset_env_cache()


@pytest.mark.parametrize("backend, key_var", LOCAL)
def test_a_backend_picked_by_env_file_gets_no_real_key_at_the_default_port(dotenv_on, monkeypatch, capsys,
                                                                           backend, key_var):
    (dotenv_on / ".env").write_text(f"KBINDEX_LLM_BACKEND={backend}\n")
    monkeypatch.setenv(key_var, SECRET)
    c = resolve()
    assert c.sources["backend"] == ".env" and c.sources["url"] == "default"
    assert c.api_key is None and "withheld" in c.sources["api_key"]
    assert f"{key_var} from the environment is not sent" in capsys.readouterr().err


@pytest.mark.parametrize("backend, key_var", LOCAL)
def test_a_backend_named_by_the_index_gets_no_real_key_at_the_default_port(dotenv_on, monkeypatch, backend,
                                                                           key_var):
    monkeypatch.setenv(key_var, SECRET)
    c = resolve_embed(EmbedOptions(), stored=(backend, "some-model"))
    assert c.sources["backend"] == "index" and c.api_key is None and c.key_withheld


@pytest.mark.parametrize("backend, key_var", LOCAL)
def test_a_backend_the_user_picked_gets_the_real_key_at_the_default_port(dotenv_on, monkeypatch, backend,
                                                                         key_var):
    monkeypatch.setenv(key_var, SECRET)
    assert resolve(LLMOptions(backend=backend)).api_key == SECRET                  # the flag
    monkeypatch.setenv("KBINDEX_LLM_BACKEND", backend)
    assert resolve().api_key == SECRET                                             # the real environment
    assert resolve_embed(EmbedOptions(backend=backend), stored=(backend, "m")).api_key == SECRET


def test_a_url_the_user_set_gets_the_real_key_whoever_picked_the_backend(dotenv_on, monkeypatch):
    (dotenv_on / ".env").write_text("KBINDEX_LLM_BACKEND=openai\n")
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert resolve().api_key == SECRET


def test_the_env_file_may_supply_its_own_key_for_the_backend_it_picked(dotenv_on, monkeypatch):
    (dotenv_on / ".env").write_text("KBINDEX_LLM_BACKEND=openai\nOPENAI_API_KEY=sk-from-file\n")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    c = resolve()
    assert c.api_key == "sk-from-file" and c.sources["api_key"] == "OPENAI_API_KEY (.env)"


def test_gemini_picked_by_env_file_gets_the_real_key_at_googles_endpoint(dotenv_on, monkeypatch):
    (dotenv_on / ".env").write_text("KBINDEX_LLM_BACKEND=gemini\n")
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    c = resolve()
    assert c.base_url is None and c.api_key == SECRET   # None: the backend's https://generativelanguage...


def test_a_withheld_gemini_key_is_said_to_be_withheld_not_missing(dotenv_on, monkeypatch):
    (dotenv_on / ".env").write_text("KBINDEX_GEMINI_BASE_URL=http://127.0.0.1:9\n")
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    with pytest.raises(LLMConfigError) as caught:
        make_backend(resolve(LLMOptions(backend="gemini")))
    message = caught.value.message
    assert "withheld" in message and "KBINDEX_GEMINI_BASE_URL" in message and str(dotenv_on / ".env") in message
    assert "set GEMINI_API_KEY" not in message
