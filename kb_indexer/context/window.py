"""The model's context window in tokens: ``--window``, else ``KBINDEX_CONTEXT_WINDOW``, else a default.

The defaults are what the server actually gives a request, not what the model could take:

* ``ollama``: ``OLLAMA_CONTEXT_LENGTH`` when set (the server's own setting), else 4,096, Ollama's
  default context length (kbindex does not raise ``num_ctx``);
* ``gemini``: 1,048,576 (Gemini 2.x Flash and Pro);
* ``openai`` and ``none``: 8,192 (llama.cpp, LM Studio and vLLM are started with a context size of
  their own; set ``--window`` to it);
* a model name that starts with a known family overrides the backend default (``MODEL_WINDOWS``).
"""

from __future__ import annotations

import os

from kb_indexer import settings
from kb_indexer.errors import UsageError

ENV = "KBINDEX_CONTEXT_WINDOW"
MIN_WINDOW = 256
MAX_WINDOW = 10_000_000
BACKEND_WINDOWS = {"ollama": 4096, "gemini": 1_048_576, "openai": 8192, "none": 8192}
MODEL_WINDOWS = (("gemini-1.5-pro", 2_097_152), ("gemini", 1_048_576), ("gpt-4.1", 1_047_576),
                 ("gpt-4o", 128_000), ("gpt-5", 400_000), ("o3", 200_000), ("o4", 200_000))


def check_window(value: int, what: str = "--window") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_WINDOW <= value <= MAX_WINDOW:
        raise UsageError(f"{what} must be a whole number of tokens from {MIN_WINDOW} to {MAX_WINDOW:,}, "
                         f"got {value!r}")
    return value


def resolve_window(window: int | None, backend: str | None = None, model: str | None = None) -> tuple[int, str]:
    """(window, where it came from)."""
    if window is not None:
        return check_window(window), "--window"
    raw = settings.text(ENV)
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"{ENV} must be a whole number of tokens, got {raw!r}") from None
        return check_window(value, ENV), ENV
    for prefix, size in MODEL_WINDOWS:
        if model and model.lower().startswith(prefix):
            return size, f"model {model}"
    backend = backend or "none"
    note = ""
    if backend == "ollama" and os.environ.get("OLLAMA_CONTEXT_LENGTH", "").strip():
        raw = os.environ["OLLAMA_CONTEXT_LENGTH"].strip()
        if raw.isdigit() and MIN_WINDOW <= int(raw) <= MAX_WINDOW:
            return int(raw), "OLLAMA_CONTEXT_LENGTH"
        note = f" (OLLAMA_CONTEXT_LENGTH={raw!r} is not a usable token count: ignored)"
    return BACKEND_WINDOWS.get(backend, 8192), f"{backend} default{note}"
