"""The resolved LLM settings every backend reads (below :mod:`kb_indexer.llm.config`, which resolves them
from flags, environment and ``.env``, and the registry that picks a backend): backends import this
module, never ``config``, so there is no import cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_TOKENS = 1024
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"   # llama.cpp's llama-server; `kbindex model serve`


@dataclass
class LLMConfig:
    backend: str
    model: str | None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = DEFAULT_RETRIES
    use_cache: bool = True
    max_tokens_cap: int = DEFAULT_MAX_TOKENS
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    sources: dict[str, str] = field(default_factory=dict)
    env_file: str | None = None
    #: Why the server URL cannot be used (the backend is then not made: ``LLMConfigError``); None when it can.
    url_error: str | None = None
    #: Why an API key set in the real environment is not sent to this server; None when none was withheld.
    key_withheld: str | None = None
    #: Why the backend named by the environment or a ``.env`` was not used (an unknown name: the LLM is then
    #: disabled, features fall back); None when it was. An unknown name given with a flag is bad usage.
    backend_error: str | None = None

    @property
    def enabled(self) -> bool:
        return self.backend != "none"

    def describe(self) -> dict[str, Any]:
        """Settings without secrets (for doctor and error messages)."""
        return {"backend": self.backend, "model": self.model, "url": self.base_url,
                "timeout": self.timeout, "retries": self.retries, "cache": self.use_cache,
                "max_tokens_cap": self.max_tokens_cap, "api_key_set": bool(self.api_key),
                "sources": dict(self.sources), "env_file": self.env_file}



def ollama_host(raw: str | None) -> str:
    """Normalise ``OLLAMA_HOST`` the way Ollama does (scheme and port optional)."""
    if not raw:
        return DEFAULT_OLLAMA_HOST
    raw = raw.strip().rstrip("/")
    if "://" not in raw:
        raw = "http://" + raw
    scheme, rest = raw.split("://", 1)
    host, _, path = rest.partition("/")
    if host.startswith("["):
        has_port = "]:" in host
    else:
        has_port = ":" in host
    if not has_port:
        host += ":443" if scheme == "https" else ":11434"
    if host.startswith("0.0.0.0"):
        host = "127.0.0.1" + host[len("0.0.0.0"):]
    return f"{scheme}://{host}" + (f"/{path}" if path else "")
