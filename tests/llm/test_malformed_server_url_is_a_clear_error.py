"""A malformed server URL (a newline in it, an unclosed IPv6 bracket, another scheme, no host, a port out of
range), from the environment or from a `.env`, is a clear error naming the variable and where it came from:
`doctor` lists it as a problem (no crash, no "internal"), and LLM features fall back and say so (exit 0)."""

from __future__ import annotations


import pytest

from helpers import write_doc
from kb_indexer.llm import config

BAD = [
    ("openai", "KBINDEX_OPENAI_BASE_URL", "http://127.0.0.1:18081/v1\nx"),
    ("openai", "KBINDEX_OPENAI_BASE_URL", "http://[::1"),
    ("openai", "KBINDEX_OPENAI_BASE_URL", "file:///etc/passwd"),
    ("openai", "KBINDEX_OPENAI_BASE_URL", "http://127.0.0.1:99999/v1"),
    ("openai", "KBINDEX_OPENAI_BASE_URL", "http:///v1"),
    ("ollama", "OLLAMA_HOST", "http://127.0.0.1:11434\nx"),
    ("ollama", "OLLAMA_HOST", "http://[::1"),
    ("gemini", "KBINDEX_GEMINI_BASE_URL", "http://[::1"),
]


@pytest.mark.parametrize("backend, var, value", BAD)
def test_doctor_reports_a_malformed_url_from_the_environment(run, tmp_path, backend, var, value):
    res = run("doctor", "--llm-backend", backend, "--format", "json", cwd=tmp_path,
              env={var: value, "GEMINI_API_KEY": "k"})
    assert res.returncode == 0, res.stderr
    report = res.json()
    problem = next(p for p in report["problems"] if var in p)
    assert "from the environment" in problem and "not a usable server URL" in problem
    assert report["llm"]["error"] and "internal" not in res.stderr and "bug" not in res.stderr


def test_a_multi_line_quoted_env_file_value_is_named_with_its_file(run, tmp_path, dotenv_on):
    (tmp_path / ".env").write_text('KBINDEX_LLM_BACKEND=openai\nKBINDEX_OPENAI_BASE_URL="http://127.0.0.1:9/v1\nx"\n')
    res = run("doctor", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    problem = next(p for p in res.json()["problems"] if "KBINDEX_OPENAI_BASE_URL" in p)
    assert str(tmp_path / ".env") in problem and "not a usable server URL" in problem


def test_an_llm_feature_falls_back_and_says_why(run, tmp_path):
    write_doc(tmp_path / "kb", "a.md", "# Agents\n\nReinforcement learning trains agents with rewards.\n")
    assert run("init", "--kb", tmp_path / "kb", cwd=tmp_path).returncode == 0
    assert run("sync", cwd=tmp_path).returncode == 0
    res = run("enrich", "--dry-run", "a.md", "--llm-backend", "openai", "--format", "json", cwd=tmp_path,
              env={"KBINDEX_OPENAI_BASE_URL": "http://[::1"})
    assert res.returncode == 0, res.stderr
    doc = res.json()["documents"][0]
    assert doc["method"] == "statistical" and "KBINDEX_OPENAI_BASE_URL" in doc["fallback"]
    assert "KBINDEX_OPENAI_BASE_URL" in res.stderr and "internal" not in res.stderr


def test_a_good_url_is_still_accepted(monkeypatch):
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", "https://[::1]:8443/v1/")
    c = config.resolve(config.LLMOptions(backend="openai"))
    assert c.base_url == "https://[::1]:8443/v1" and c.url_error is None
