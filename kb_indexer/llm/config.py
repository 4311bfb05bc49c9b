"""Which LLM backend and model to use: flags, then environment, then ``.env``, then defaults.

Nothing here imports an SDK or a backend module; the backends live in
:mod:`kb_indexer.llm.registry`, whose ``make_backend`` imports the chosen
backend's module (and so its SDK) only when a command actually needs it. One ``.env``
(``KBINDEX_ENV_FILE``, else ``./.env``; see :mod:`kb_indexer.llm.envfile` for what it may
set and when it is ignored) is read the first time an LLM-using command resolves its
settings; it never overrides a variable that is already set. A server URL that came from
the ``.env`` gets only an API key from that same file, never one from the real environment.

The ``KBINDEX_*`` variables read here (backend, model, timeout, retries, token cap, server URLs, the
embedding backend and model) are declared, with their defaults, in :mod:`kb_indexer.settings`. Besides
them: ``OLLAMA_HOST`` (Ollama's server, default http://127.0.0.1:11434), ``OLLAMA_API_KEY``,
``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``), ``GOOGLE_GEMINI_BASE_URL`` and ``OPENAI_API_KEY``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from kb_indexer import settings
from kb_indexer.errors import UsageError
from kb_indexer.llm import registry
from kb_indexer.llm.envfile import SERVERS, EnvFile, forget_warnings, read_env_file, warn
from kb_indexer.llm.settings import (DEFAULT_MAX_TOKENS, DEFAULT_OLLAMA_HOST, DEFAULT_OPENAI_BASE_URL,  # noqa: F401
                                     DEFAULT_RETRIES, DEFAULT_TIMEOUT, LLMConfig, ollama_host)

#: The backends and their default models live in :mod:`kb_indexer.llm.registry` (plugins may add
#: more); ``none`` disables the LLM (callers use their fallback).
DEFAULT_BACKEND = "ollama"

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


def _timeout_retries(timeout: float | None, retries: int | None) -> tuple[float, int]:
    """The call timeout and retries: as given, else ``KBINDEX_LLM_TIMEOUT``/``KBINDEX_LLM_RETRIES``, else defaults."""
    if timeout is not None:
        timeout = check_timeout(timeout)
    elif given := settings.raw("KBINDEX_LLM_TIMEOUT"):
        timeout = _number("KBINDEX_LLM_TIMEOUT", given, float)
    else:
        timeout = DEFAULT_TIMEOUT
    if retries is not None:
        retries = max(0, int(retries))
    elif given := settings.raw("KBINDEX_LLM_RETRIES"):
        retries = _number("KBINDEX_LLM_RETRIES", given, int)
    else:
        retries = DEFAULT_RETRIES
    return timeout, retries


def _first(names: tuple[str, ...], values: Any) -> str | None:
    return next((name for name in names if values.get(name)), None)


#: Backends whose default server is the provider's own https endpoint (Google's, for Gemini): a key from the
#: real environment may go there whoever chose the backend. Every other default is a local plain-HTTP port
#: that any local user can listen on.
PROVIDER_DEFAULT = frozenset({"gemini"})


def _untrusted(backend: str, url_var: str | None, dotenv: EnvFile,
               sources: dict[str, str]) -> tuple[str, str] | None:
    """Why this server may get only a key from the ``.env`` (never one from the real environment), and what
    the user can do about it; None when the user chose the server, or the backend whose default it is."""
    if url_var is not None:
        if url_var not in dotenv.applied:
            return None
        return f"{url_var} comes from {dotenv.path}", "put the key in that file if the server needs one"
    chooser = {".env": str(dotenv.path), "index": "the index"}.get(sources.get("backend", ""))
    if chooser is None or backend in PROVIDER_DEFAULT:
        return None
    return (f"the {backend} backend was chosen by {chooser} and its server is the default local port",
            f"choose the backend with a flag or in the environment, or set {SERVERS[backend][0][0]} there")


def _api_key(backend: str, url_var: str | None, env: Any, dotenv: EnvFile,
             sources: dict[str, str]) -> tuple[str | None, str | None]:
    """The key for the server (and why a real-environment key was withheld, if one was): a server the user
    did not choose (see :func:`_untrusted`) gets only a key from the ``.env`` itself."""
    key_vars = SERVERS[backend][1]
    untrusted = _untrusted(backend, url_var, dotenv, sources)
    pool = env if untrusted is None else dotenv.values
    key_var = _first(key_vars, pool)
    if key_var:
        sources["api_key"] = f"{key_var} ({'.env' if untrusted else _source(key_var, dotenv)})"
        return pool[key_var], None
    withheld = _first(key_vars, env) if untrusted else None
    if not withheld or untrusted is None:
        return None, None
    reason, remedy = untrusted
    sources["api_key"] = f"{withheld} (env) withheld: {reason}"
    warn(f"{reason}, so {withheld} from the environment is not sent to it: requests go without an API key "
         f"({remedy})")
    return None, f"{withheld} is set in the environment but withheld: {reason} ({remedy})"


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot name a server (None: it can): http(s), a host, a port in range, nothing unprintable."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "it contains whitespace or a control character"
    try:
        parts = urlsplit(url)
        port = parts.port   # ValueError when not a number or out of range
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http or https"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is not a server's port"
    return None


def _endpoint(backend: str, env: Any, dotenv: EnvFile, sources: dict[str, str]) -> dict[str, Any]:
    """The server URL, API key and their problems for ``backend`` (``sources`` says where each came from)."""
    if backend not in SERVERS:
        return {}
    url_var = _first(SERVERS[backend][0], env)
    sources["url"] = _source(url_var, dotenv) if url_var else "default"
    raw = env[url_var] if url_var else None
    if backend == "ollama":
        base_url: str | None = ollama_host(raw)
    elif backend == "openai":
        base_url = (raw or DEFAULT_OPENAI_BASE_URL).rstrip("/")
    else:
        base_url = raw
    problem = url_problem(base_url) if raw and base_url else None
    if problem:
        where = dotenv.path if url_var in dotenv.applied else "the environment"
        return {"url_error": f"{url_var} (from {where}) is not a usable server URL: {problem}: {raw!r}"}
    api_key, withheld = _api_key(backend, url_var, env, dotenv, sources)
    return {"base_url": base_url, "api_key": api_key, "key_withheld": withheld}


_T = TypeVar("_T")


def _choose(flag: str | None, var: str, dotenv: EnvFile, *fallbacks: tuple[bool, _T, str],
            lower: bool = False) -> tuple[str | _T, str]:
    """One setting and where it came from: the flag, else the environment variable ``var`` (or ``.env``),
    else the first ``(applies, value, source)`` fallback that applies."""
    if flag:
        return (flag.strip().lower() if lower else flag), "flag"
    value = settings.raw(var)
    if value:
        return (value.strip().lower() if lower else value), _source(var, dotenv)
    return next((value, source) for applies, value, source in fallbacks if applies)


def resolve(opts: LLMOptions | None = None) -> LLMConfig:
    """Settle backend, model, URL, key, timeout, retries and caching for one command."""
    opts = opts or LLMOptions()
    dotenv = load_env()
    env = os.environ
    sources: dict[str, str] = {}

    backend, sources["backend"] = _choose(opts.backend, "KBINDEX_LLM_BACKEND", dotenv,
                                          (True, DEFAULT_BACKEND, "default"), lower=True)
    backend_error = unknown_backend(opts)
    if backend_error:   # named by the environment or .env: the LLM is off, features fall back
        backend = registry.DISABLED
    spec = None if backend == registry.DISABLED else registry.get(backend)  # UsageError when unknown (a flag)
    model, sources["model"] = _choose(opts.model, "KBINDEX_LLM_MODEL", dotenv,
                                      (True, spec.default_model if spec else None, "default"))

    timeout, retries = _timeout_retries(opts.timeout, opts.retries)
    raw_cap = settings.raw("KBINDEX_LLM_MAX_TOKENS")
    cap = _number("KBINDEX_LLM_MAX_TOKENS", raw_cap, int) if raw_cap else DEFAULT_MAX_TOKENS

    return LLMConfig(backend=backend, model=model, timeout=timeout, retries=retries,
                     use_cache=not opts.no_cache, max_tokens_cap=cap, sources=sources,
                     env_file=str(dotenv.path) if dotenv.path else None, backend_error=backend_error,
                     **_endpoint(backend, env, dotenv, sources))


def unknown_backend(opts: LLMOptions | None = None) -> str | None:
    """Why the LLM backend named by ``KBINDEX_LLM_BACKEND`` (the environment or ``.env``) cannot be used, with
    a warning on stderr (once), or None. Such a backend is reported and the LLM features fall back as with no
    backend; an unknown name given with a flag (``opts.backend``) stays bad usage (:func:`resolve`)."""
    return _unknown_from_env(opts.backend if opts is not None else None, "KBINDEX_LLM_BACKEND", "LLM",
                             "the LLM features fall back as with none")


def unknown_embed_backend() -> str | None:
    """Why the embedding backend named by ``KBINDEX_EMBED_BACKEND`` (the environment or ``.env``) cannot be
    used, or None: queries then run without vectors (saying why) and ``kbindex embed`` stops with this
    message. Not warned here: the query's own "without vectors" warning and embed's error carry it."""
    return _unknown_from_env(None, "KBINDEX_EMBED_BACKEND", "embedding",
                             "queries run without vectors and `kbindex embed` stops", warned=False)


def _unknown_from_env(flag: str | None, var: str, what: str, consequence: str, warned: bool = True) -> str | None:
    """Why the backend the environment variable ``var`` (or ``.env``) names is not a known one (warned on
    stderr unless ``warned`` is False), or None: also None when a flag chose the backend (an unknown flag is
    bad usage)."""
    if flag:
        return None
    dotenv = load_env()
    value = settings.text(var).lower()
    if not value or value == registry.DISABLED or value in registry.names():
        return None
    where = dotenv.path if var in dotenv.applied else "the environment"
    message = (f"{var}={value!r} (from {where}) is not a known {what} backend (expected one of: "
               f"{', '.join(registry.names() + (registry.DISABLED,))}): {consequence}")
    if warned:
        warn(message)
    return message


def chosen_backend(opts: LLMOptions | None = None) -> str | None:
    """The LLM backend the user chose (flag, environment or ``.env``), lower case; None when none was."""
    opts = opts or LLMOptions()
    if opts.backend:
        return opts.backend.strip().lower()
    load_env()
    return settings.text("KBINDEX_LLM_BACKEND").lower() or None


def is_configured(opts: LLMOptions | None = None) -> bool:
    """True when the user chose an LLM backend explicitly (flag, environment or ``.env``), not ``none``.

    Features where the LLM is optional (``query --context``, ``similar --user-context``) use it only then.
    """
    value = chosen_backend(opts)
    if opts is not None and opts.backend:
        return value != "none"
    return bool(value) and value != "none" and unknown_backend(opts) is None


def unconfigured_report(opts: LLMOptions | None = None) -> dict[str, Any]:
    """The ``llm`` report of a feature where the LLM is optional and none is configured
    (:func:`is_configured` is False): nothing was asked, the lexical fallback answered, and why."""
    return {"backend": None, "model": None, "used": False, "fallback": "lexical", "error": None,
            "reason": unknown_backend(opts) or "no LLM backend configured (--llm-backend or KBINDEX_LLM_BACKEND)"}


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
    backend, sources["backend"] = _choose(opts.backend, "KBINDEX_EMBED_BACKEND", dotenv,
                                          (stored is not None, stored[0] if stored else DEFAULT_BACKEND, "index"),
                                          (True, DEFAULT_BACKEND, "default"), lower=True)
    backend_error = None if opts.backend else unknown_embed_backend()
    if backend_error:   # named by the environment or .env (an unknown flag stays bad usage)
        backend = registry.DISABLED
    spec = None if backend == registry.DISABLED else registry.get(backend, "embedding")
    model, sources["model"] = _choose(opts.model, "KBINDEX_EMBED_MODEL", dotenv,
                                      (stored is not None and stored[0] == backend, stored and stored[1], "index"),
                                      (True, spec.default_embed_model if spec else None, "default"))
    timeout, retries = _timeout_retries(opts.timeout, opts.retries)
    return LLMConfig(backend=backend, model=model, timeout=timeout, retries=retries, use_cache=True,
                     sources=sources, env_file=str(dotenv.path) if dotenv.path else None, backend_error=backend_error,
                     **_endpoint(backend, env, dotenv, sources))


def embed_configured(opts: EmbedOptions | None = None) -> bool:
    """True when the user chose an embedding backend (flag, environment or ``.env``), not ``none``."""
    opts = opts or EmbedOptions()
    if opts.backend:
        return opts.backend.strip().lower() != registry.DISABLED
    load_env()
    value = settings.text("KBINDEX_EMBED_BACKEND").lower()
    return bool(value) and value != registry.DISABLED
