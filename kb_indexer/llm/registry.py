"""The LLM backends by name: a small registry, and the plugin hook that adds more.

The built-in backends are ``ollama``, ``gemini`` and ``openai``, and ``local``
(in this process, numpy; embeddings only, the optional extra ``kbindex[local]``); each is
registered with a factory that imports its module (and so its SDK) only when a
command makes a backend. ``none`` is not a backend: it switches the LLM off.

Plugins: ``KBINDEX_LLM_PLUGINS`` holds a comma-separated list of Python module
names or ``.py`` file paths. Each is imported the first time a backend name is
looked up, and registers its backends with :func:`register`::

    # my_backend.py
    from kb_indexer.llm.registry import register
    register("mine", lambda config: MyBackend(config), default_model="my-model")

The test suite registers its scripted double (``fake``) this way, so the
production CLI ships no test backend.

This module imports nothing from the backends or from :mod:`kb_indexer.llm.config`
(which imports it), so there is no import cycle.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kb_indexer import settings
from kb_indexer.errors import UsageError

PLUGINS_ENV = "KBINDEX_LLM_PLUGINS"
DISABLED = "none"


@dataclass(frozen=True)
class BackendSpec:
    name: str
    factory: Callable[[Any], Any]          # LLMConfig -> backend
    default_model: str | None = None       # None: the server picks (or the backend knows)
    schema_in_prompt: bool = False         # quote the JSON schema in the prompt as well
    default_embed_model: str | None = None  # the embedding model when none is configured


_REGISTRY: dict[str, BackendSpec] = {}
_loaded_plugins: set[str] = set()


def register(name: str, factory: Callable[[Any], Any], *, default_model: str | None = None,
             schema_in_prompt: bool = False, default_embed_model: str | None = None) -> BackendSpec:
    """Add (or replace) a backend under ``name``."""
    name = name.strip().lower()
    if not name or name == DISABLED:
        raise ValueError(f"cannot register an LLM backend named {name!r}")
    spec = BackendSpec(name, factory, default_model, schema_in_prompt, default_embed_model)
    _REGISTRY[name] = spec
    return spec


def unregister(name: str) -> None:
    _REGISTRY.pop(name.strip().lower(), None)


def _load_plugin(ref: str) -> None:
    if ref.endswith(".py") or os.sep in ref or "/" in ref:
        path = Path(ref).expanduser().resolve()
        existing = sys.modules.get(path.stem)
        file = getattr(existing, "__file__", None) if existing is not None else None
        if file and Path(file).resolve() == path:
            return  # already imported under its own name (e.g. by the test suite)
        spec = importlib.util.spec_from_file_location(f"kbindex_llm_plugin_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{PLUGINS_ENV}: cannot load {ref!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(ref)


def load_plugins() -> None:
    """Import every plugin named in ``KBINDEX_LLM_PLUGINS`` (once per process)."""
    for ref in (r.strip() for r in settings.raw(PLUGINS_ENV).split(",")):
        if not ref or ref in _loaded_plugins:
            continue
        try:
            _load_plugin(ref)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(f"{PLUGINS_ENV}: cannot load the LLM plugin {ref!r}: {type(exc).__name__}: {exc}") from None
        _loaded_plugins.add(ref)


def names() -> tuple[str, ...]:
    """Every backend name, built-in first (``none`` is not included)."""
    load_plugins()
    return tuple(_REGISTRY)


def get(name: str, what: str = "LLM") -> BackendSpec:
    """The backend called ``name``; an unknown one is bad usage, named as a ``what`` backend (``LLM`` or
    ``embedding``: the flag the user gave)."""
    load_plugins()
    spec = _REGISTRY.get(name)
    if spec is None:
        raise UsageError(f"Unknown {what} backend {name!r}; expected one of: {', '.join(names() + (DISABLED,))}")
    return spec


def make_backend(config: Any) -> Any:
    """Instantiate the configured backend (this is where an SDK gets imported)."""
    if config.backend == DISABLED:
        raise UsageError(f"LLM backend {DISABLED!r} cannot make calls")
    if getattr(config, "url_error", None):  # a malformed server URL: a clear error, features fall back
        from kb_indexer.llm.base import LLMConfigError  # lazy: llm.base (dataclasses) stays off the cold search path
        raise LLMConfigError(config.url_error)
    return get(config.backend).factory(config)


def _ollama(config: Any) -> Any:
    # lazy: httpx and the ollama SDK, only when this backend is used
    from kb_indexer.llm.ollama_backend import OllamaBackend
    return OllamaBackend(config)


def _gemini(config: Any) -> Any:
    from kb_indexer.llm.gemini_backend import GeminiBackend  # lazy: httpx, only when this backend is used
    return GeminiBackend(config)


def _openai(config: Any) -> Any:
    from kb_indexer.llm.openai_backend import OpenAIBackend  # lazy: httpx, only when this backend is used
    return OpenAIBackend(config)


def _local(config: Any) -> Any:
    # lazy: the numpy encoder (extra local), only when this backend is used
    from kb_indexer.llm.local_backend import LocalBackend
    return LocalBackend(config)


register("ollama", _ollama, default_model="llama3.2:3b", schema_in_prompt=True,
         default_embed_model="nomic-embed-text")
register("gemini", _gemini, default_model="gemini-2.5-flash",   # stable, not a preview model
         default_embed_model="gemini-embedding-001")
register("openai", _openai, default_model=None)                 # the server's first model (GET /models)
register("local", _local, default_model=None, default_embed_model="all-MiniLM-L6-v2")  # embeddings only
