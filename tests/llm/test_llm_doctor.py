"""`kbindex doctor`: configuration, reachability with the URL tried, model, latency, index and schema."""

from __future__ import annotations

import json

from llm_helpers import Reply, openai_models, openai_reply


def test_nothing_reachable(run, tmp_path, closed_port):
    res = run("doctor", "--format", "json", cwd=tmp_path,
              env={"OLLAMA_HOST": f"127.0.0.1:{closed_port}", "KBINDEX_NO_DOTENV": "1"})
    assert res.returncode == 0, res.stderr
    report = res.json()
    llm = report["llm"]
    assert llm["backend"] == "ollama" and llm["model"] == "llama3.2:3b"
    assert llm["reachable"] is False and llm["url"] == f"http://127.0.0.1:{closed_port}/api/tags"
    assert llm["latency_ms"] is None and llm["error"]
    assert report["database"]["exists"] is False and report["database"]["path"] == str(tmp_path / "kbindex.db")
    assert report["ok"] is False and len(report["problems"]) == 2
    assert "warning:" in res.stderr and "Traceback" not in res.stderr
    strict = run("doctor", "--strict", "--format", "json", cwd=tmp_path,
                 env={"OLLAMA_HOST": f"127.0.0.1:{closed_port}"})
    assert strict.returncode == 1 and strict.stdout == ""   # a failed command prints nothing on stdout
    error = strict.error()  # stderr is one JSON error object under --strict, the report in it
    assert error["code"] == "doctor_problems" and len(error["details"]["problems"]) == 2
    assert error["details"]["report"]["ok"] is False and error["details"]["report"]["llm"]["backend"] == "ollama"


def test_default_ollama_unreachable_still_reports(run, tmp_path):
    # Whatever runs on this machine, doctor must answer with a report (nothing listens on port 9 here).
    res = run("doctor", cwd=tmp_path, env={"OLLAMA_HOST": "127.0.0.1:9"})
    assert res.returncode == 0 and "LLM backend" in res.stdout and "127.0.0.1:9" in res.stdout


def test_gemini_without_key_makes_no_request(run, tmp_path):
    res = run("doctor", "--llm-backend", "gemini", "--format", "json", cwd=tmp_path)
    llm = res.json()["llm"]
    assert llm["api_key_set"] is False and "GEMINI_API_KEY" in llm["error"] and llm["reachable"] is None


def test_backend_none(run, tmp_path):
    llm = run("doctor", "--llm-backend", "none", "--format", "json", cwd=tmp_path).json()["llm"]
    assert llm["backend"] == "none" and "disabled" in llm["error"]


def test_openai_server_reachable_with_round_trip(run, kb, http_server):
    http_server.expect("/v1/models", Reply(body=openai_models("tiny.gguf")))
    http_server.expect("/v1/chat/completions", Reply(body=openai_reply('{"ok": true}')))
    res = run("doctor", "--llm-backend", "openai", "--db", kb.db_path, "--format", "json",
              env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"})
    assert res.returncode == 0, res.stderr
    report = res.json()
    llm = report["llm"]
    assert llm["reachable"] is True and llm["model_available"] is True and llm["model"] == "tiny.gguf"
    assert llm["url"] == http_server.url + "/v1/models" and llm["models"] == ["tiny.gguf"]
    assert llm["structured_output"] is True and llm["latency_ms"] > 0
    assert llm["sources"]["backend"] == "flag" and llm["sources"]["url"] == "env"
    sent = http_server.posts("/v1/chat/completions")[0].json
    assert sent["max_tokens"] == 16 and sent["model"] == "tiny.gguf"
    db = report["database"]
    assert db["exists"] and db["up_to_date"] is True and db["schema"]["migrations"] == db["schema"]["known"]
    assert db["kb_root"] == str(kb.kb_root) and db["llm_cache_entries"] == 0  # doctor does not cache
    assert report["ok"] is True and report["problems"] == [] and res.stderr == ""


def test_model_missing_on_server(run, tmp_path, http_server):
    http_server.expect("/v1/models", Reply(body=openai_models("tiny.gguf")))
    res = run("doctor", "--llm-backend", "openai", "--llm-model", "big", "--format", "json", cwd=tmp_path,
              env={"KBINDEX_OPENAI_BASE_URL": http_server.url + "/v1"})
    llm = res.json()["llm"]
    assert llm["reachable"] is True and llm["model_available"] is False and llm["latency_ms"] is None
    assert any("'big' is not available" in p for p in res.json()["problems"])
    assert http_server.posts() == []  # no round trip to a missing model


def test_table_output(run, kb, closed_port):
    res = run("doctor", "--db", kb.db_path, env={"OLLAMA_HOST": f"127.0.0.1:{closed_port}"})
    assert res.returncode == 0
    for label in ("LLM backend", "URL tried", "reachable", "index", "schema"):
        assert label in res.stdout
