"""A server named by a `.env` never receives an API key from the real environment.

Either the same `.env` supplies the key, or the request goes without one (with one warning). A loopback
server records what each backend actually sends.
"""

from __future__ import annotations


import pytest
from llm_helpers import Reply, ollama_reply, openai_models, openai_reply

from kb_indexer.llm.config import LLMOptions, resolve

SECRET = "sk-real-secret"


def no_secret_sent(server) -> None:
    assert server.requests, "the backend made no request"
    for req in server.requests:
        assert "authorization" not in req.headers and "x-goog-api-key" not in req.headers
        assert SECRET not in repr(req.headers) and SECRET.encode() not in req.body and SECRET not in req.path


def test_openai_url_from_env_file_gets_no_key_from_the_environment_cli(run, tmp_path, http_server, dotenv_on):
    http_server.route("/v1/models", lambda r: Reply(body=openai_models("m")))
    http_server.route("/v1/chat/completions", lambda r: Reply(body=openai_reply('{"ok": true}')))
    project = tmp_path / "cloned-notes"
    project.mkdir()
    (project / ".env").write_text(f"KBINDEX_LLM_BACKEND=openai\nKBINDEX_OPENAI_BASE_URL={http_server.url}/v1\n")
    res = run("doctor", "--format", "json", cwd=project, env={"OPENAI_API_KEY": SECRET})
    assert res.returncode == 0, res.stderr
    no_secret_sent(http_server)
    assert http_server.posts("/v1/chat/completions")  # the round trip went, without a key
    llm = res.json()["llm"]
    assert llm["api_key_set"] is False and llm["sources"]["url"] == ".env"
    assert "withheld" in llm["sources"]["api_key"]
    assert res.stderr.count("OPENAI_API_KEY from the environment is not sent") == 1


def test_the_same_env_file_may_supply_the_key_for_its_server(tmp_path, monkeypatch, http_server, dotenv_on):
    (tmp_path / ".env").write_text(f"KBINDEX_OPENAI_BASE_URL={http_server.url}/v1\nOPENAI_API_KEY=sk-from-file\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # set in the real environment: still not sent there
    c = resolve(LLMOptions(backend="openai"))
    assert c.api_key == "sk-from-file" and c.sources["api_key"] == "OPENAI_API_KEY (.env)"


def test_a_server_from_the_environment_still_gets_the_environment_key(tmp_path, monkeypatch, dotenv_on):
    (tmp_path / ".env").write_text("KBINDEX_LLM_MODEL=m\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    c = resolve(LLMOptions(backend="openai"))
    assert c.api_key == SECRET and c.sources == {"backend": "flag", "model": ".env", "url": "env",
                                                 "api_key": "OPENAI_API_KEY (env)"}


@pytest.mark.parametrize("backend, url_var, key_var", [
    ("openai", "KBINDEX_OPENAI_BASE_URL", "OPENAI_API_KEY"),
    ("gemini", "KBINDEX_GEMINI_BASE_URL", "GEMINI_API_KEY"),
    ("gemini", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY"),
    ("ollama", "OLLAMA_HOST", "OLLAMA_API_KEY"),
])
def test_no_backend_pairs_a_env_file_server_with_an_environment_key(tmp_path, monkeypatch, capsys, dotenv_on,
                                                                    backend, url_var, key_var):
    (tmp_path / ".env").write_text(f"{url_var}=http://127.0.0.1:9\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(key_var, SECRET)
    c = resolve(LLMOptions(backend=backend))
    assert c.base_url.startswith("http://127.0.0.1:9") and c.sources["url"] == ".env"
    assert c.api_key is None and c.describe()["api_key_set"] is False
    assert f"{key_var} from the environment is not sent" in capsys.readouterr().err


def test_ollama_host_from_env_file_gets_no_ollama_api_key_api(tmp_path, monkeypatch, http_server, dotenv_on):
    """The Ollama SDK adds OLLAMA_API_KEY from os.environ by itself: the backend must not let it."""
    http_server.route("/api/tags", lambda r: Reply(body={"models": [{"name": "llama3.2:3b", "model": "llama3.2:3b"}]}))
    http_server.route("/api/chat", lambda r: Reply(body=ollama_reply('{"ok": true}')))
    (tmp_path / ".env").write_text(f"OLLAMA_HOST={http_server.url}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OLLAMA_API_KEY", SECRET)
    from kb_indexer.api import KnowledgeBase

    report = KnowledgeBase.doctor(tmp_path / "kbindex.db", LLMOptions(backend="ollama"))
    assert report["llm"]["reachable"] is True
    no_secret_sent(http_server)


def test_ollama_host_from_the_environment_gets_the_ollama_api_key(tmp_path, monkeypatch, http_server, dotenv_on):
    http_server.route("/api/tags", lambda r: Reply(body={"models": [{"name": "llama3.2:3b", "model": "llama3.2:3b"}]}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OLLAMA_HOST", http_server.url)
    monkeypatch.setenv("OLLAMA_API_KEY", SECRET)
    from kb_indexer.api import KnowledgeBase

    KnowledgeBase.doctor(tmp_path / "kbindex.db", LLMOptions(backend="ollama"), roundtrip=False)
    assert {r.headers.get("authorization") for r in http_server.requests} == {f"Bearer {SECRET}"}
