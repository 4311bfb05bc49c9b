"""Which LLM backend and model to use: flags, then environment, then ``.env``, then defaults.

Nothing here imports an SDK or a backend module; the backends live in
:mod:`kb_indexer.llm.registry`, whose ``make_backend`` imports the chosen
backend's module (and so its SDK) only when a command actually needs it. One ``.env``
(``KBINDEX_ENV_FILE``, else ``./.env``; see :mod:`kb_indexer.llm.envfile` for what it may
set and when it is ignored) is read the first time an LLM-using command resolves its
settings; it never overrides a variable that is already set. A server URL that came from
the ``.env`` gets only an API key from that same file, never one from the real environment.

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
``OLLAMA_API_KEY``         Ollama's key, if the server wants one
``KBINDEX_ENV_FILE``       the ``.env`` to read instead of ``./.env`` (real environment only)
``KBINDEX_NO_DOTENV``      set to skip reading ``.env``
``KBINDEX_LLM_PLUGINS``    modules or .py files that register more backends (real environment only)
``KBINDEX_EMBED_BACKEND``  embedding backend: ``ollama``, ``gemini``, ``openai``, ``local`` or ``none``
                           (default: the one the index's vectors were made with, else ``ollama``)
``KBINDEX_EMBED_MODEL``    embedding model (default: the index's, else the backend's default)
=========================  ==================================================
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.llm import registry
from kb_indexer.llm.envfile import SERVERS, EnvFile, forget_warnings, read_env_file, warn
from kb_indexer.llm.settings import (DEFAULT_MAX_TOKENS, DEFAULT_OLLAMA_HOST, DEFAULT_RETRIES,  # noqa: F401
                                     DEFAULT_TIMEOUT, LLMConfig, ollama_host)

#: The backends and their default models live in :mod:`kb_indexer.llm.registry` (plugins may add
#: more); ``none`` disables the LLM (callers use their fallback).
DEFAULT_BACKEND = "ollama"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"

_env_file: EnvFile | None = None


def load_env() -> EnvFile:
    """Read the ``.env`` once (without overriding the environment): its path, values and the names it set."""
    global _env_file
    if _env_file is None:
        _env_file = read_env_file()
    return _env_file


def reset_env_cache() -> None:
    """Forget that ``.env`` was read, and the warnings given (tests)."""
    global _env_file
    _env_file = None
    forget_warnings()


@dataclass
class LLMOptions:
    """What the user asked for on the command line (None = not given)."""

    backend: str | None = None
    model: str | None = None
    timeout: float | None = None
    no_cache: bool = False
    retries: int | None = None


def _source(name: str, dotenv: EnvFile) -> str:
    return ".env" if name in dotenv.applied else "env"


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


def _first(names: tuple[str, ...], values: Any) -> str | None:
    return next((name for name in names if values.get(name)), None)


def _api_key(url_var: str | None, key_vars: tuple[str, ...], env: Any, dotenv: EnvFile,
             sources: dict[str, str]) -> str | None:
    """The key for the server ``url_var`` names: a server named by the ``.env`` gets only a key from
    that same file (a key from the real environment is withheld, with a warning)."""
    if url_var is None or url_var not in dotenv.applied:
        key_var = _first(key_vars, env)
        if key_var:
            sources["api_key"] = f"{key_var} ({_source(key_var, dotenv)})"
        return env[key_var] if key_var else None
    key_var = _first(key_vars, dotenv.values)
    if key_var:
        sources["api_key"] = f"{key_var} (.env)"
        return dotenv.values[key_var]
    withheld = _first(key_vars, env)
    if withheld:
        sources["api_key"] = f"{withheld} (env) withheld: the server is from .env"
        warn(f"{url_var} comes from {dotenv.path}, so {withheld} from the environment is not sent to it: "
             f"requests go without an API key (put the key in that file if the server needs one)")
    return None


def _endpoint(backend: str, env: Any, dotenv: EnvFile,
              sources: dict[str, str]) -> tuple[str | None, str | None]:
    """The server URL and API key of ``backend`` from the environment (``sources`` says where from)."""
    if backend not in SERVERS:
        return None, None
    url_vars, key_vars = SERVERS[backend]
    url_var = _first(url_vars, env)
    sources["url"] = _source(url_var, dotenv) if url_var else "default"
    raw = env[url_var] if url_var else None
    if backend == "ollama":
        base_url: str | None = ollama_host(raw)
    elif backend == "openai":
        base_url = (raw or DEFAULT_OPENAI_BASE_URL).rstrip("/")
    else:
        base_url = raw
    return base_url, _api_key(url_var, key_vars, env, dotenv, sources)


def _choose(flag: str | None, var: str, env, dotenv, *fallbacks: tuple[bool, object, str],
            lower: bool = False) -> tuple[object, str]:
    """One setting and where it came from: the flag, else the environment variable ``var`` (or ``.env``),
    else the first ``(applies, value, source)`` fallback that applies."""
    if flag:
        return (flag.strip().lower() if lower else flag), "flag"
    if env.get(var):
        return (env[var].strip().lower() if lower else env[var]), _source(var, dotenv)
    return next((value, source) for applies, value, source in fallbacks if applies)


def resolve(opts: LLMOptions | None = None) -> LLMConfig:
    """Settle backend, model, URL, key, timeout, retries and caching for one command."""
    opts = opts or LLMOptions()
    dotenv = load_env()
    env = os.environ
    sources: dict[str, str] = {}

    backend, sources["backend"] = _choose(opts.backend, "KBINDEX_LLM_BACKEND", env, dotenv,
                                          (True, DEFAULT_BACKEND, "default"), lower=True)
    spec = None if backend == registry.DISABLED else registry.get(backend)  # UsageError when unknown
    model, sources["model"] = _choose(opts.model, "KBINDEX_LLM_MODEL", env, dotenv,
                                      (True, spec.default_model if spec else None, "default"))

    timeout, retries = _timeout_retries(opts.timeout, opts.retries, env)
    cap = (_number("KBINDEX_LLM_MAX_TOKENS", env["KBINDEX_LLM_MAX_TOKENS"], int)
           if env.get("KBINDEX_LLM_MAX_TOKENS") else DEFAULT_MAX_TOKENS)

    base_url, api_key = _endpoint(backend, env, dotenv, sources)

    return LLMConfig(backend=backend, model=model, timeout=timeout, retries=retries,
                     use_cache=not opts.no_cache, max_tokens_cap=cap, base_url=base_url, api_key=api_key,
                     sources=sources, env_file=str(dotenv.path) if dotenv.path else None)


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
    dotenv = load_env()
    env = os.environ
    sources: dict[str, str] = {}
    backend, sources["backend"] = _choose(opts.backend, "KBINDEX_EMBED_BACKEND", env, dotenv,
                                          (bool(stored), stored and stored[0], "index"),
                                          (True, DEFAULT_BACKEND, "default"), lower=True)
    spec = None if backend == registry.DISABLED else registry.get(backend)
    model, sources["model"] = _choose(opts.model, "KBINDEX_EMBED_MODEL", env, dotenv,
                                      (bool(stored) and stored[0] == backend, stored and stored[1], "index"),
                                      (True, spec.default_embed_model if spec else None, "default"))
    timeout, retries = _timeout_retries(opts.timeout, opts.retries, env)
    base_url, api_key = _endpoint(backend, env, dotenv, sources)
    return LLMConfig(backend=backend, model=model, timeout=timeout, retries=retries, use_cache=True,
                     base_url=base_url, api_key=api_key, sources=sources,
                     env_file=str(dotenv.path) if dotenv.path else None)


def embed_configured(opts: EmbedOptions | None = None) -> bool:
    """True when the user chose an embedding backend (flag, environment or ``.env``), not ``none``."""
    opts = opts or EmbedOptions()
    if opts.backend:
        return opts.backend.strip().lower() != registry.DISABLED
    load_env()
    value = os.environ.get("KBINDEX_EMBED_BACKEND", "").strip().lower()
    return bool(value) and value != registry.DISABLED
