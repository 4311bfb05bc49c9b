"""`kbindex embed` with nobody having chosen a backend, and no Ollama running, names the way that needs no
server (the bundled local model); when Ollama was chosen, the error is Ollama's alone."""

from __future__ import annotations


def test_the_default_backend_unreachable_names_the_local_model(kb, run, closed_port):
    env = {"OLLAMA_HOST": f"127.0.0.1:{closed_port}"}
    res = run("embed", "--format", "json", "--db", kb.db_path, env=env)
    assert res.returncode == 1 and res.error()["code"] == "llm_unavailable"
    assert "kbindex embed --embed-backend local" in res.error()["message"]
    chosen = run("embed", "--embed-backend", "ollama", "--format", "json", "--db", kb.db_path, env=env)
    assert chosen.returncode == 1 and "--embed-backend local" not in chosen.error()["message"]
