"""Which LLM backend and model to use: flags, then environment, then ``.env``, then defaults.

Nothing here imports an SDK or a backend module; the backends live in
:mod:`kb_indexer.llm.registry`, whose ``make_backend`` imports the chosen
backend's module (and so its SDK) only when a command actually needs it. The ``.env``
file (found from the current directory upwards) is read with python-dotenv the
first time an LLM-using command resolves its settings; it never overrides a
variable that is already set.

Environment variables:

=========================  ==================================================
``KBINDEX_LLM_BACKEND``    ``ollama`` (default), ``gemini``, ``openai`` or ``none``
``KBINDEX_LLM_MODEL``      the model (default depends on the backend)
``KBINDEX_LLM_TIMEOUT``    seconds one LLM call may take in all, retries included (default 60)
``KBINDEX_LLM_RETRIES``    retries on 429/5xx/connection errors (default 2)
``KBINDEX_LLM_MAX_TOKENS`` hard cap on the tokens of any answer (default 1024)
``OLLAMA_HOST``            Ollama server (default http://127.0.0.1:11434)
``GEMINI_API_KEY``         Gemini key (or ``GOOGLE_API_KEY``)
``KBINDEX_GEMINI_BASE_URL`` another Gemini endpoint (proxies, tests)
``KBINDEX_OPENAI_BASE_URL`` OpenAI-compatible server (default http://127.0.0.1:8080/v1)
``OPENAI_API_KEY``         its key, if it wants one
``KBINDEX_NO_DOTENV``      set to skip reading ``.env``
``KBINDEX_LLM_PLUGINS``    modules or .py files that register more backends
``KBINDEX_EMBED_BACKEND``  embedding backend: ``ollama``, ``gemini``, ``openai``, ``local`` or ``none``
                           (default: the one the index's vectors were made with, else ``ollama``)
``KBINDEX_EMBED_MODEL``    embedding model (default: the index's, else the backend's default)
=========================  ==================================================
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.llm import registry
from kb_indexer.llm.settings import (DEFAULT_MAX_TOKENS, DEFAULT_OLLAMA_HOST, DEFAULT_RETRIES,  # noqa: F401
                                     DEFAULT_TIMEOUT, LLMConfig, ollama_host)

#: The backends and their default models live in :mod:`kb_indexer.llm.registry` (plugins may add
#: more); ``none`` disables the LLM (callers use their fallback).
DEFAULT_BACKEND = "ollama"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"

_env_loaded: tuple[bool, Path | None, set[str]] = (False, None, set())


def load_env() -> tuple[Path | None, set[str]]:
    """Read ``.env`` once (without overriding the environment); returns its path and the names it set."""
    global _env_loaded
    if _env_loaded[0]:
        return _env_loaded[1], _env_loaded[2]
    path: Path | None = None
    names: set[str] = set()
    if not os.environ.get("KBINDEX_NO_DOTENV"):
        from dotenv import dotenv_values, find_dotenv

        found = find_dotenv(usecwd=True)
        if found:
            path = Path(found)
            for key, value in dotenv_values(found).items():
                if value is not None and key not in os.environ:
                    os.environ[key] = value
                    names.add(key)
    _env_loaded = (True, path, names)
    return path, names


def reset_env_cache() -> None:
    """Forget that ``.env`` was read (tests)."""
    global _env_loaded
    _env_loaded = (False, None, set())


@dataclass
class LLMOptions:
    """What the user asked for on the command line (None = not given)."""

    backend: str | None = None
    model: str | None = None
    timeout: float | None = None
    no_cache: bool = False
    retries: int | None = None


def _source(name: str, dotenv_names: set[str]) -> str:
    return ".env" if name in dotenv_names else "env"


def _number(name: str, value: str, kind: type) -> Any:
    try:
        out = kind(value)
    except ValueError:
        raise UsageError(f"{name} must be a number, got {value!r}") from None
    if kind is float and not math.isfinite(out):
        raise UsageError(f"{name} must be a finite number of seconds, got {value!r}")
    if out <= 0 and not (kind is int and out == 0):
        raise UsageError(f"{name} must be positive, got {value!r}")
    return out


def check_timeout(value: Any, name: str = "--llm-timeout") -> float:
    """A timeout in seconds: a finite, positive number (NaN and infinity are usage errors)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(out) or out <= 0:
        raise UsageError(f"{name} must be a finite, positive number of seconds, got {value!r}")
    return out


def _timeout_retries(timeout: float | None, retries: int | None, env: Any) -> tuple[float, int]:
    """The call timeout and retries: as given, else ``KBINDEX_LLM_TIMEOUT``/``KBINDEX_LLM_RETRIES``, else defaults."""
    if timeout is not None:
        timeout = check_timeout(timeout)
    elif env.get("KBINDEX_LLM_TIMEOUT"):
        timeout = _number("KBINDEX_LLM_TIMEOUT", env["KBINDEX_LLM_TIMEOUT"], float)
    else:
        timeout = DEFAULT_TIMEOUT
    if retries is not None:
        retries = max(0, int(retries))
    elif env.get("KBINDEX_LLM_RETRIES"):
        retries = _number("KBINDEX_LLM_RETRIES", env["KBINDEX_LLM_RETRIES"], int)
    else:
        retries = DEFAULT_RETRIES
    return timeout, retries


def _endpoint(backend: str, env: Any, from_dotenv: set[str],
              sources: dict[str, str]) -> tuple[str | None, str | None]:
    """The server URL and API key of ``backend`` from the environment (``sources`` says where from)."""
    base_url: str | None = None
    api_key: str | None = None
    if backend == "ollama":
        base_url = ollama_host(env.get("OLLAMA_HOST"))
        sources["url"] = _source("OLLAMA_HOST", from_dotenv) if env.get("OLLAMA_HOST") else "default"
    elif backend == "gemini":
        for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
            if env.get(name):
                api_key, sources["api_key"] = env[name], f"{name} ({_source(name, from_dotenv)})"
                break
        base_url = env.get("KBINDEX_GEMINI_BASE_URL") or env.get("GOOGLE_GEMINI_BASE_URL") or None
        sources["url"] = "env" if base_url else "default"
    elif backend == "openai":
        base_url = (env.get("KBINDEX_OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        sources["url"] = (_source("KBINDEX_OPENAI_BASE_URL", from_dotenv)
                          if env.get("KBINDEX_OPENAI_BASE_URL") else "default")
        api_key = env.get("OPENAI_API_KEY") or None
        if api_key:
            sources["api_key"] = f"OPENAI_API_KEY ({_source('OPENAI_API_KEY', from_dotenv)})"

    return base_url, api_key


def _choose(flag: str | None, var: str, env, from_dotenv, *fallbacks: tuple[bool, object, str],
            lower: bool = False) -> tuple[object, str]:
    """One setting and where it came from: the flag, else the environment variable ``var`` (or ``.env``),
    else the first ``(applies, value, source)`` fallback that applies."""
    if flag:
        return (flag.strip().lower() if lower else flag), "flag"
    if env.get(var):
        return (env[var].strip().lower() if lower else env[var]), _source(var, from_dotenv)
    return next((value, source) for applies, value, source in fallbacks if applies)


def resolve(opts: LLMOptions | None = None) -> LLMConfig:
    """Settle backend, model, URL, key, timeout, retries and caching for one command."""
    opts = opts or LLMOptions()
    env_file, from_dotenv = load_env()
    env = os.environ
    sources: dict[str, str] = {}

    backend, sources["backend"] = _choose(opts.backend, "KBINDEX_LLM_BACKEND", env, from_dotenv,
                                          (True, DEFAULT_BACKEND, "default"), lower=True)
    spec = None if backend == registry.DISABLED else registry.get(backend)  # UsageError when unknown
    model, sources["model"] = _choose(opts.model, "KBINDEX_LLM_MODEL", env, from_dotenv,
                                      (True, spec.default_model if spec else None, "default"))

    timeout, retries = _timeout_retries(opts.timeout, opts.retries, env)
    cap = (_number("KBINDEX_LLM_MAX_TOKENS", env["KBINDEX_LLM_MAX_TOKENS"], int)
           if env.get("KBINDEX_LLM_MAX_TOKENS") else DEFAULT_MAX_TOKENS)

    base_url, api_key = _endpoint(backend, env, from_dotenv, sources)

    return LLMConfig(backend=backend, model=model, timeout=timeout, retries=retries,
                     use_cache=not opts.no_cache, max_tokens_cap=cap, base_url=base_url, api_key=api_key,
                     sources=sources, env_file=str(env_file) if env_file else None)


def is_configured(opts: LLMOptions | None = None) -> bool:
    """True when the user chose an LLM backend explicitly (flag, environment or ``.env``), not ``none``.

    Features where the LLM is optional (``query --context``) use it only then.
    """
    opts = opts or LLMOptions()
    if opts.backend:
        return opts.backend.strip().lower() != "none"
    load_env()
    value = os.environ.get("KBINDEX_LLM_BACKEND", "").strip().lower()
    return bool(value) and value != "none"


@dataclass
class EmbedOptions:
    """The embedding flags of one command (None = not given)."""

    backend: str | None = None
    model: str | None = None
    timeout: float | None = None
    retries: int | None = None


def resolve_embed(opts: EmbedOptions | None = None, stored: tuple[str, str] | None = None) -> LLMConfig:
    """The embedding backend and model: flags, then ``KBINDEX_EMBED_BACKEND``/``KBINDEX_EMBED_MODEL``,
    then ``stored`` (the backend and model of the index's newest vectors), then ``ollama`` with the
    backend's default embedding model. Timeout and retries are the LLM's (``KBINDEX_LLM_TIMEOUT``...)."""
    opts = opts or EmbedOptions()
    env_file, from_dotenv = load_env()
    env = os.environ
    sources: dict[str, str] = {}
    backend, sources["backend"] = _choose(opts.backend, "KBINDEX_EMBED_BACKEND", env, from_dotenv,
                                          (bool(stored), stored and stored[0], "index"),
                                          (True, DEFAULT_BACKEND, "default"), lower=True)
    spec = None if backend == registry.DISABLED else registry.get(backend)
    model, sources["model"] = _choose(opts.model, "KBINDEX_EMBED_MODEL", env, from_dotenv,
                                      (bool(stored) and stored[0] == backend, stored and stored[1], "index"),
                                      (True, spec.default_embed_model if spec else None, "default"))
    timeout, retries = _timeout_retries(opts.timeout, opts.retries, env)
    base_url, api_key = _endpoint(backend, env, from_dotenv, sources)
    return LLMConfig(backend=backend, model=model, timeout=timeout, retries=retries, use_cache=True,
                     base_url=base_url, api_key=api_key, sources=sources,
                     env_file=str(env_file) if env_file else None)


def embed_configured(opts: EmbedOptions | None = None) -> bool:
    """True when the user chose an embedding backend (flag, environment or ``.env``), not ``none``."""
    opts = opts or EmbedOptions()
    if opts.backend:
        return opts.backend.strip().lower() != registry.DISABLED
    load_env()
    value = os.environ.get("KBINDEX_EMBED_BACKEND", "").strip().lower()
    return bool(value) and value != registry.DISABLED
