"""Gemini via ``google-genai``: structured output through ``response_json_schema``.

Key from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (environment or ``.env``).
Default model ``gemini-2.5-flash`` (stable). Thinking is switched off for the
2.5 Flash models (its tokens would count against the small output caps used
for judgements) and kept at its minimum for 2.5 Pro. The SDK's own retries stay
off: :class:`kb_indexer.llm.structured.LLMClient` retries.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from kb_indexer.llm.base import (ChatChunk, Completion, LLMAuthError, LLMBadResponse, LLMConfigError, LLMError,
                                 LLMTimeout, LLMUnavailable, Message, ProbeResult, Tool, ToolCall, error_for_status)
from kb_indexer.llm.settings import LLMConfig

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"


def _http_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """Timeout and transport errors of httpx and of httpx2 (the fork the SDK prefers when installed)."""
    timeouts: list[type[BaseException]] = [httpx.TimeoutException]
    transport: list[type[BaseException]] = [httpx.TransportError]
    try:
        import httpx2
    except ImportError:
        pass
    else:
        timeouts.append(httpx2.TimeoutException)
        transport.append(httpx2.TransportError)
    return tuple(timeouts), tuple(transport)


_TIMEOUTS, _TRANSPORT = _http_errors()


def _contents(messages: list[Message]) -> tuple[str | None, list[types.Content]]:
    """Gemini takes the system prompt apart and calls the assistant ``model``."""
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    contents: list[types.Content] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            try:
                payload = json.loads(m.content)
            except (json.JSONDecodeError, TypeError):
                payload = None
            if not isinstance(payload, dict):
                payload = {"result": m.content}
            part = types.Part.from_function_response(name=m.name or "tool", response=payload)
            contents.append(types.Content(role="user", parts=[part]))
            continue
        parts: list[types.Part] = []
        if m.content:
            parts.append(types.Part(text=m.content))
        for t in m.tool_calls:
            parts.append(types.Part(function_call=types.FunctionCall(name=t.name, args=t.arguments)))
        contents.append(types.Content(role="model" if m.role == "assistant" else "user",
                                      parts=parts or [types.Part(text="")]))
    return system, contents


def _finish(resp: Any) -> str | None:
    try:
        reason = resp.candidates[0].finish_reason
    except (AttributeError, IndexError, TypeError):
        return None
    return getattr(reason, "value", None) or (str(reason) if reason else None)


def _text(resp: Any) -> str:
    out = []
    for cand in (getattr(resp, "candidates", None) or [])[:1]:
        for part in (getattr(cand.content, "parts", None) or []) if cand.content else []:
            if getattr(part, "text", None) and not getattr(part, "thought", False):
                out.append(part.text)
    return "".join(out)


def _calls(resp: Any) -> list[ToolCall]:
    out = []
    for cand in (getattr(resp, "candidates", None) or [])[:1]:
        for part in (getattr(cand.content, "parts", None) or []) if cand.content else []:
            fc = getattr(part, "function_call", None)
            if fc is not None:
                out.append(ToolCall(name=fc.name or "", arguments=dict(fc.args or {}), id=fc.id))
    return out


def _usage(resp: Any) -> dict[str, int]:
    meta = getattr(resp, "usage_metadata", None)
    if meta is None:
        return {}
    usage = {"prompt_tokens": meta.prompt_token_count, "completion_tokens": meta.candidates_token_count}
    return {k: v for k, v in usage.items() if isinstance(v, int)}


class GeminiBackend:
    name = "gemini"

    def __init__(self, config: LLMConfig):
        if not config.api_key:
            raise LLMConfigError("no Gemini API key: set GEMINI_API_KEY or GOOGLE_API_KEY (environment or .env)")
        self.config = config
        self.model = config.model or "gemini-2.5-flash"
        self.base_url = config.base_url or DEFAULT_BASE_URL
        options = types.HttpOptions(timeout=int(config.timeout * 1000),
                                    base_url=config.base_url if config.base_url else None)
        self._client = genai.Client(api_key=config.api_key, http_options=options)

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # pragma: no cover - closing is best effort
            pass

    @contextmanager
    def _errors(self, timeout: float):
        try:
            yield
        except LLMError:
            raise
        except genai_errors.APIError as exc:
            message = getattr(exc, "message", None) or str(exc)
            if exc.code == 400 and "api key" in message.lower():
                raise LLMAuthError(f"Gemini refused the API key: {message}", status=400) from None
            raise error_for_status(exc.code or 0, message, model=self.model) from None
        except _TIMEOUTS as exc:
            raise LLMTimeout(f"no answer from Gemini within {timeout:g}s ({type(exc).__name__})") from None
        except _TRANSPORT as exc:
            raise LLMUnavailable.from_transport(
                f"cannot reach Gemini at {self.base_url}: {exc or type(exc).__name__}", exc) from None
        except (ValueError, TypeError, AttributeError, KeyError) as exc:  # JSON and pydantic errors included
            raise LLMBadResponse(f"Gemini sent an answer the SDK cannot read: {type(exc).__name__}: "
                                 f"{str(exc)[:200]}") from None

    def _config(self, system: str | None, max_tokens: int, temperature: float, timeout: float,
                **extra: Any) -> types.GenerateContentConfig:
        thinking = None
        name = self.model.lower()
        if "2.5-flash" in name:
            thinking = types.ThinkingConfig(thinking_budget=0)
        elif "2.5-pro" in name:
            thinking = types.ThinkingConfig(thinking_budget=128)
            max_tokens += 128
        return types.GenerateContentConfig(
            system_instruction=system, temperature=temperature, max_output_tokens=max_tokens,
            thinking_config=thinking, http_options=types.HttpOptions(timeout=int(timeout * 1000)), **extra)

    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str, max_tokens: int,
                      temperature: float, timeout: float) -> Completion:
        system, contents = _contents(messages)
        config = self._config(system, max_tokens, temperature, timeout,
                              response_mime_type="application/json", response_json_schema=schema)
        with self._errors(timeout):
            resp = self._client.models.generate_content(model=self.model, contents=contents, config=config)
            return Completion(text=_text(resp), finish_reason=_finish(resp), usage=_usage(resp))

    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        system, contents = _contents(messages)
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = [types.Tool(function_declarations=[
                types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=t.parameters)
                for t in tools])]
            extra["automatic_function_calling"] = types.AutomaticFunctionCallingConfig(disable=True)
        config = self._config(system, max_tokens, temperature, timeout, **extra)
        if not stream:
            with self._errors(timeout):
                resp = self._client.models.generate_content(model=self.model, contents=contents, config=config)
            return Completion(text=_text(resp), finish_reason=_finish(resp), usage=_usage(resp),
                              tool_calls=_calls(resp))
        return self._stream(contents, config, timeout)

    def _stream(self, contents: list[types.Content], config: types.GenerateContentConfig,
                timeout: float) -> Iterator[ChatChunk]:
        calls: list[ToolCall] = []
        finish, usage = None, {}
        with self._errors(timeout):
            for part in self._client.models.generate_content_stream(model=self.model, contents=contents,
                                                                     config=config):
                calls.extend(_calls(part))
                finish = _finish(part) or finish
                usage = _usage(part) or usage
                text = _text(part)
                if text:
                    yield ChatChunk(text=text)
        yield ChatChunk(finish_reason=finish or "STOP", tool_calls=calls, usage=usage)

    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        """``models.embed_content`` with every text as one content (the SDK sends one batch request)."""
        config = types.EmbedContentConfig(http_options=types.HttpOptions(timeout=int(timeout * 1000)))
        with self._errors(timeout):
            resp = self._client.models.embed_content(model=self.model, contents=list(texts), config=config)
            return [list(e.values or []) for e in (resp.embeddings or [])]

    def probe(self, timeout: float) -> ProbeResult:
        try:
            version = self._client._api_client._http_options.api_version or "v1"
        except AttributeError:  # pragma: no cover - SDK internals moved
            version = "v1"
        url = f"{self.base_url.rstrip('/')}/{version}/models/{self.model}"
        try:
            with self._errors(timeout):
                info = self._client.models.get(model=self.model,
                                               config=types.GetModelConfig(
                                                   http_options=types.HttpOptions(timeout=int(timeout * 1000))))
        except LLMError as exc:
            reachable = exc.status is not None
            available = False if exc.code == "llm_model_not_found" else None
            return ProbeResult(url=url, reachable=reachable, model_available=available, error=exc.message)
        name = (getattr(info, "name", "") or "").removeprefix("models/")
        return ProbeResult(url=url, reachable=True, model_available=True, models=[name] if name else [])
