"""Gemini through its REST API (``generativelanguage.googleapis.com/v1beta``), with httpx directly.

Key from ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``, sent only in the ``x-goog-api-key`` header;
redirects are not followed, so the key never reaches another host. ``KBINDEX_GEMINI_BASE_URL``
(or ``GOOGLE_GEMINI_BASE_URL``) points at another endpoint (proxies, tests). Default model
``gemini-2.5-flash`` (stable). Structured output through ``responseJsonSchema``. Thinking is
switched off for the 2.5 Flash models (its tokens would count against the small output caps used
for judgements) and kept at its minimum for 2.5 Pro.

Like the OpenAI-compatible backend (and through the same :mod:`kb_indexer.llm.rest` helpers), the
client's transports keep a :class:`~kb_indexer.llm.guard.Budget`: ``timeout`` is a deadline for the
whole call, a trickling or endless body included, and replies are size-capped. Retries (429, 5xx,
a dropped connection; not a refused one) are :class:`kb_indexer.llm.structured.LLMClient`'s, as for
every backend. The google-genai SDK is not used (nor a dependency any more): with the REST calls here, the
deadline, size cap, redirect and error rules are the ones of :mod:`kb_indexer.llm.rest`, not those of the
SDK's own HTTP layer (which follows redirects with the key, retries on its own, and switches to the
httpx2 fork when that is installed).
"""

from __future__ import annotations

import json
from typing import Any, Iterator
from urllib.parse import quote

from kb_indexer.llm.base import (ChatChunk, Completion, LLMAuthError, LLMBadResponse, LLMConfigError, LLMError,
                                 Message, ProbeResult, Tool, ToolCall)
from kb_indexer.llm.guard import Budget
from kb_indexer.llm.rest import guarded_client, json_object, open_stream, raise_for, send, sse_events
from kb_indexer.llm.settings import LLMConfig

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"


def model_path(model: str) -> str:
    """``models/<name>`` (a name given with its ``models/`` or ``tunedModels/`` prefix is kept), URL-quoted."""
    name = model.strip()
    if not name.startswith(("models/", "tunedModels/")):
        name = "models/" + name
    return quote(name, safe="/")


def wire_contents(messages: list[Message]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Gemini takes the system prompt apart and calls the assistant ``model``."""
    system_text = "\n\n".join(m.content for m in messages if m.role == "system")
    system = {"parts": [{"text": system_text}]} if system_text else None
    contents: list[dict[str, Any]] = []
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
            part = {"functionResponse": {"name": m.name or "tool", "response": payload}}
            contents.append({"role": "user", "parts": [part]})
            continue
        parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
        parts += [{"functionCall": {"name": t.name, "args": t.arguments}} for t in m.tool_calls]
        contents.append({"role": "model" if m.role == "assistant" else "user", "parts": parts or [{"text": ""}]})
    return system, contents


def _candidate(data: dict[str, Any]) -> dict[str, Any]:
    """The first candidate of a reply; ``LLMBadResponse`` when there is none (a blocked prompt says why)."""
    candidates = data.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return candidates[0]
    feedback = data.get("promptFeedback")
    reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
    why = f"the prompt was blocked ({reason})" if reason else f"no candidate in {json.dumps(data)[:200]}"
    raise LLMBadResponse(f"Gemini sent no answer: {why}")


def _parts(candidate: dict[str, Any]) -> list[dict[str, Any]]:
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(parts: list[dict[str, Any]]) -> str:
    pieces = [p.get("text") for p in parts if not p.get("thought")]
    return "".join(t for t in pieces if isinstance(t, str))


def _calls(parts: list[dict[str, Any]]) -> list[ToolCall]:
    out = []
    for p in parts:
        fc = p.get("functionCall")
        if isinstance(fc, dict):
            args = fc.get("args")
            out.append(ToolCall(name=str(fc.get("name") or ""), arguments=args if isinstance(args, dict) else {},
                                id=fc.get("id") if isinstance(fc.get("id"), str) else None))
    return out


def _usage(data: dict[str, Any]) -> dict[str, int]:
    meta = data.get("usageMetadata")
    if not isinstance(meta, dict):
        return {}
    usage = {"prompt_tokens": meta.get("promptTokenCount"), "completion_tokens": meta.get("candidatesTokenCount")}
    return {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}


def _completion(data: dict[str, Any]) -> Completion:
    candidate = _candidate(data)
    parts = _parts(candidate)
    finish = candidate.get("finishReason")
    return Completion(text=_text(parts), finish_reason=finish if isinstance(finish, str) else None,
                      usage=_usage(data), tool_calls=_calls(parts))


class GeminiBackend:
    name = "gemini"

    def __init__(self, config: LLMConfig):
        if not config.api_key and config.key_withheld:
            raise LLMConfigError(f"no Gemini API key to send: {config.key_withheld}")
        if not config.api_key:
            raise LLMConfigError("no Gemini API key: set GEMINI_API_KEY or GOOGLE_API_KEY (environment or .env)")
        self.config = config
        self.model = config.model or "gemini-2.5-flash"
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.budget = Budget()
        headers = {"Accept": "application/json", "x-goog-api-key": config.api_key}
        self._http = guarded_client(f"{self.base_url}/{API_VERSION}", headers, config.timeout, self.budget,
                                    follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def _post(self, method: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        """``POST models/<model>:<method>``: the reply's JSON object, or the ``LLMError`` it stands for."""
        resp = send(self._http, "POST", f"{model_path(self.model)}:{method}", body=body, timeout=timeout)
        self._raise_for(resp)
        return json_object(resp)

    def _raise_for(self, resp: Any) -> None:
        try:
            raise_for(resp, self.model)
        except LLMError as exc:
            if exc.status == 400 and "api key" in exc.message.lower():
                raise LLMAuthError(f"Gemini refused the API key: {exc.message}", status=400) from None
            raise

    def _request(self, messages: list[Message], max_tokens: int, temperature: float,
                 **generation: Any) -> dict[str, Any]:
        system, contents = wire_contents(messages)
        config: dict[str, Any] = {"temperature": temperature, "maxOutputTokens": max_tokens, **generation}
        name = self.model.lower()
        if "2.5-flash" in name:
            config["thinkingConfig"] = {"thinkingBudget": 0}
        elif "2.5-pro" in name:
            config["thinkingConfig"] = {"thinkingBudget": 128}
            config["maxOutputTokens"] = max_tokens + 128
        body: dict[str, Any] = {"contents": contents, "generationConfig": config}
        if system:
            body["systemInstruction"] = system
        return body

    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str, max_tokens: int,
                      temperature: float, timeout: float) -> Completion:
        self.budget.start(timeout, self.config.timeout)
        body = self._request(messages, max_tokens, temperature, responseMimeType="application/json",
                             responseJsonSchema=schema)
        completion = _completion(self._post("generateContent", body, timeout))
        completion.tool_calls = []
        return completion

    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        self.budget.start(timeout, self.config.timeout)
        body = self._request(messages, max_tokens, temperature)
        if tools:
            body["tools"] = [{"functionDeclarations": [
                {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
                for t in tools]}]
        if not stream:
            return _completion(self._post("generateContent", body, timeout))
        resp = send(self._http, "POST", f"{model_path(self.model)}:streamGenerateContent", body=body,
                    timeout=timeout, stream=True, params={"alt": "sse"})
        return self._stream(open_stream(resp, self._raise_for), timeout)

    def _stream(self, resp: Any, timeout: float) -> Iterator[ChatChunk]:
        calls: list[ToolCall] = []
        finish: str | None = None
        usage: dict[str, Any] = {}
        for data in sse_events(resp, self.base_url, timeout):
            usage = _usage(data) or usage
            candidates = data.get("candidates")
            if not (isinstance(candidates, list) and candidates and isinstance(candidates[0], dict)):
                continue
            parts = _parts(candidates[0])
            calls.extend(_calls(parts))
            reason = candidates[0].get("finishReason")
            finish = reason if isinstance(reason, str) else finish
            text = _text(parts)
            if text:
                yield ChatChunk(text=text)
        yield ChatChunk(finish_reason=finish or "STOP", tool_calls=calls, usage=usage)

    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        """``POST models/<model>:batchEmbedContents`` with one request per text, in order."""
        self.budget.start(timeout, self.config.timeout)
        name = model_path(self.model)
        body = {"requests": [{"model": name, "content": {"parts": [{"text": t}]}} for t in texts]}
        embeddings = self._post("batchEmbedContents", body, timeout).get("embeddings")
        if not isinstance(embeddings, list) or not all(isinstance(e, dict) for e in embeddings):
            raise LLMBadResponse(f"Gemini sent no list of embeddings for {self.model}")
        return [list(e.get("values") or []) for e in embeddings]

    def probe(self, timeout: float) -> ProbeResult:
        url = f"{self.base_url}/{API_VERSION}/{model_path(self.model)}"
        self.budget.start(timeout, self.config.timeout)
        try:
            resp = send(self._http, "GET", model_path(self.model), timeout=timeout)
            self._raise_for(resp)
            info = json_object(resp)
        except LLMError as exc:
            reachable = exc.status is not None or isinstance(exc, LLMBadResponse)
            available = False if exc.code == "llm_model_not_found" else None
            return ProbeResult(url=url, reachable=reachable, model_available=available, error=exc.message)
        name = str(info.get("name") or "").removeprefix("models/")
        return ProbeResult(url=url, reachable=True, model_available=True, models=[name] if name else [])
