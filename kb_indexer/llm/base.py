"""The backend protocol shared by every LLM backend, its data types and its errors.

A backend does two things, both synchronously and without retries or caching
(those live in :mod:`kb_indexer.llm.structured`):

* ``complete_json(messages, schema, ...)``: one completion constrained to a JSON
  schema (each backend uses its server's native structured-output mode);
* ``chat(messages, tools=..., stream=...)``: a chat turn, optionally offering
  tools, optionally streamed as :class:`ChatChunk` objects;
* ``embed(texts, timeout=...)``: one embedding vector per text, in order (one
  request; batching, retries and checks live in :mod:`kb_indexer.llm.embedding`).

Every failure is an :class:`LLMError` subclass with a ``retryable`` flag, so
callers never see an SDK's or httpx's own exceptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol, runtime_checkable

from kb_indexer.errors import KbError

# -- errors -------------------------------------------------------------------------------


class LLMError(KbError):
    """An LLM call failed. ``retryable`` says whether trying again may help."""

    code = "llm_error"
    retryable = False

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None,
                 status: int | None = None, retry_after: float | None = None):
        super().__init__(message, code=code, details=details)
        self.status = status
        self.retry_after = retry_after


class LLMConfigError(LLMError):
    """The backend cannot be used as configured (missing key, bad URL, SDK missing)."""

    code = "llm_config"


class LLMUnavailable(LLMError):
    """The server could not be reached (connection refused, reset, DNS).

    A refused connection (nothing listens at the address: the server is not running) is not retried:
    a server does not start in the second the retries wait, and every command with a fallback (e.g.
    ``similar --user-context`` with the default Ollama not installed) would pay those waits.
    """

    code = "llm_unavailable"
    retryable = True

    @classmethod
    def from_transport(cls, message: str, exc: BaseException) -> "LLMUnavailable":
        """The error for a transport failure ``exc``; not retryable when the connection was refused."""
        err = cls(message)
        err.retryable = not connection_refused(exc)
        return err


def connection_refused(exc: BaseException | None) -> bool:
    """Whether ``exc`` or an exception it was raised from is a refused connection."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, ConnectionRefusedError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


class LLMTimeout(LLMError):
    """The server did not answer within the timeout."""

    code = "llm_timeout"


class LLMAuthError(LLMError):
    """The server refused the credentials (401/403)."""

    code = "llm_auth"


class LLMModelNotFound(LLMError):
    """The server does not have the requested model (404)."""

    code = "llm_model_not_found"


class LLMRateLimited(LLMError):
    """Too many requests (429); ``retry_after`` holds the server's hint in seconds."""

    code = "llm_rate_limited"
    retryable = True


class LLMServerError(LLMError):
    """The server failed (5xx)."""

    code = "llm_server_error"
    retryable = True


class LLMBadResponse(LLMError):
    """The answer was not valid JSON or did not match the schema (after the repair attempt)."""

    code = "llm_bad_response"


class LLMRequestRejected(LLMError):
    """The server rejected the request itself (400/422): a bug or an unsupported option."""

    code = "llm_request_rejected"


def error_for_status(status: int, message: str, *, retry_after: float | None = None,
                     model: str | None = None) -> LLMError:
    """Map an HTTP status to the matching :class:`LLMError`."""
    text = (message or "").strip()[:500]
    if status in (401, 403):
        return LLMAuthError(f"authentication failed (HTTP {status}): {text}", status=status)
    if status == 404:
        what = f"model {model!r} not found" if model else "not found"
        return LLMModelNotFound(f"{what} (HTTP 404): {text}", status=status)
    if status == 429:
        return LLMRateLimited(f"rate limited (HTTP 429): {text}", status=status, retry_after=retry_after)
    if status >= 500:
        return LLMServerError(f"server error (HTTP {status}): {text}", status=status)
    if status in (400, 422):
        return LLMRequestRejected(f"request rejected (HTTP {status}): {text}", status=status)
    return LLMError(f"unexpected HTTP {status}: {text}", status=status)


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


# -- data types ---------------------------------------------------------------------------


def finite_json(value: Any) -> Any:
    """``value`` (parsed JSON) with every number that is not finite (NaN, Infinity, 1e400) as None: what a
    model or server sends is echoed in kbindex's JSON, which must stay JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None

    def __post_init__(self) -> None:
        self.arguments = finite_json(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class Message:
    """One chat message. ``role`` is system, user, assistant or tool."""

    role: str
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [t.to_dict() for t in self.tool_calls]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        if self.name:
            out["name"] = self.name
        return out


def with_system_note(messages: list[Message], note: str, sep: str = "\n") -> list[Message]:
    """``messages`` with ``note`` appended to the system message (one is added first if there is none)."""
    out = list(messages)
    if out and out[0].role == "system":
        out[0] = Message("system", out[0].content.rstrip() + sep + note)
    else:
        out.insert(0, Message("system", note))
    return out


def as_messages(messages: Any) -> list[Message]:
    """Accept Message objects or ``{"role", "content"}`` dicts."""
    out = []
    for m in messages:
        if isinstance(m, Message):
            out.append(m)
        else:
            out.append(Message(role=m["role"], content=m.get("content") or "",
                               tool_call_id=m.get("tool_call_id"), name=m.get("name")))
    return out


@dataclass
class Tool:
    """A function the model may call; ``parameters`` is a JSON schema object."""

    name: str
    description: str
    parameters: dict[str, Any]

    def openai_dict(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


@dataclass
class Completion:
    """The raw answer of one backend call."""

    text: str
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class ChatChunk:
    """One piece of a streamed chat answer; the last one has ``finish_reason`` set."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class StructuredResult:
    """A validated structured answer (from the model or from the cache)."""

    data: Any
    backend: str
    model: str
    task: str
    cached: bool = False
    attempts: int = 1
    repaired: bool = False
    latency_ms: float | None = None
    usage: dict[str, int] = field(default_factory=dict)


@dataclass
class ProbeResult:
    """What ``kbindex doctor`` learns about a backend without generating text."""

    url: str | None
    reachable: bool
    model_available: bool | None = None
    models: list[str] = field(default_factory=list)
    error: str | None = None
    encoder: str | None = None     # a backend that computes in this process: what would (local: numpy...)


# -- the protocol -------------------------------------------------------------------------


@runtime_checkable
class Backend(Protocol):
    name: str
    model: str

    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str,
                      max_tokens: int, temperature: float, timeout: float) -> Completion:
        """One completion constrained to ``schema``; returns the raw text (not yet validated)."""

    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        """A chat turn; a :class:`Completion`, or an iterator of :class:`ChatChunk` when streaming."""

    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        """One embedding vector per text, in the order given (a backend without embeddings raises
        :class:`LLMConfigError`)."""

    def probe(self, timeout: float) -> ProbeResult:
        """Is the server reachable, and does it have the model?"""

    def close(self) -> None:
        """Release connections."""
