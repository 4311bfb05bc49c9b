"""Any OpenAI-compatible server (llama.cpp's server, llama-cpp-python, LM Studio, vLLM, ...).

Plain HTTP with httpx (which the Ollama and Gemini SDKs already bring). Servers
differ in how they take a JSON schema, so the backend tries, in order, and
remembers per server (and process) the first one the server accepts:

1. ``response_format: {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` (OpenAI, vLLM,
   LM Studio, llama.cpp's own server);
2. ``response_format: {"type": "json_object", "schema": ...}`` (llama-cpp-python's server);
3. ``response_format: {"type": "json_object"}`` with the schema in the prompt only;
4. no ``response_format`` at all.

A server "rejects" a mode when it answers 400/422 (or 500, as llama-cpp-python
does for request validation errors) with a message naming ``response_format``,
``json_schema`` or ``schema``.

The httpx client's transports are wrapped in :class:`~kb_indexer.llm.guard.GuardedTransport`:
``timeout`` is a deadline for the whole call (the model lookup and every
structured-output mode tried included), and answers are size-capped.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator

import httpx

from kb_indexer.llm.base import (ChatChunk, Completion, LLMBadResponse, LLMConfigError, LLMError, Message,
                                 ProbeResult, Tool, ToolCall, with_system_note)
from kb_indexer.llm.guard import Budget
from kb_indexer.llm.rest import guarded_client, json_object, open_stream, raise_for, send, sse_events
from kb_indexer.llm.settings import LLMConfig

MODES = ("json_schema", "json_object_schema", "json_object", "none")
_mode_memo: dict[str, int] = {}
_REJECTION = re.compile(r"response_format|json_schema|json_object", re.I)


def _schema_name(task: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", task)[:64] or "answer"


def response_format(mode: str, schema: dict[str, Any], task: str) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": _schema_name(task), "schema": schema, "strict": True}}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def wire_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": t.id or f"call_{i}", "type": "function",
                              "function": {"name": t.name, "arguments": json.dumps(t.arguments)}}
                             for i, t in enumerate(m.tool_calls)]
    if m.tool_call_id:
        out["tool_call_id"] = m.tool_call_id
    if m.name:
        out["name"] = m.name
    return out


def _tool_calls(raw: list[dict[str, Any]] | None) -> list[ToolCall]:
    out = []
    for t in raw or []:
        fn = t.get("function") or {}
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                args = {"_raw": args}
        out.append(ToolCall(name=fn.get("name", ""), arguments=args or {}, id=t.get("id")))
    return out


def _schema_in_prompt(messages: list[Message], schema: dict[str, Any]) -> list[Message]:
    """For servers without a schema mode: quote the schema in the system message."""
    return with_system_note(messages, "The JSON must match this JSON schema: "
                            + json.dumps(schema, separators=(",", ":")))



def reported_usage(raw: Any) -> dict[str, Any]:
    """The token counts a server reported (whole numbers) and its ``cost`` where it reports one (a finite,
    non-negative number: OpenRouter's ``usage.cost``); anything else is left out."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {k: v for k, v in raw.items()
                           if k != "cost" and isinstance(v, int) and not isinstance(v, bool)}
    cost = raw.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
        out["cost"] = float(cost)
    return out

class _FormatRejected(Exception):
    pass


class OpenAIBackend:
    name = "openai"

    def __init__(self, config: LLMConfig, *, transport: httpx.BaseTransport | None = None):
        if not config.base_url:
            raise LLMConfigError("no base URL for the openai backend (set KBINDEX_OPENAI_BASE_URL)")
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self.model: str | None = config.model
        headers = {"Accept": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self.budget = Budget()
        self._http = guarded_client(self.base_url, headers, config.timeout, self.budget, transport=transport,
                                    follow_redirects=True)

    def close(self) -> None:
        self._http.close()

    # -- HTTP --------------------------------------------------------------------------
    def _send(self, method: str, path: str, *, timeout: float, body: dict[str, Any] | None = None,
              stream: bool = False) -> httpx.Response:
        return send(self._http, method, path, timeout=timeout, body=body, stream=stream)

    def _raise_for(self, resp: httpx.Response) -> None:
        raise_for(resp, self.model)

    @staticmethod
    def _json(resp: httpx.Response) -> dict[str, Any]:
        return json_object(resp)

    def list_models(self, timeout: float) -> list[str]:
        resp = self._send("GET", "/models", timeout=timeout)
        self._raise_for(resp)
        data = self._json(resp).get("data")
        if not isinstance(data, list):
            raise LLMBadResponse(f"{self.base_url}/models did not list models: {resp.text[:200]!r}")
        return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]

    def _ensure_model(self, timeout: float) -> str:
        if not self.model:
            models = self.list_models(timeout)
            if not models:
                raise LLMConfigError(f"{self.base_url} lists no models; pass --llm-model")
            self.model = models[0]
        return self.model

    # -- structured --------------------------------------------------------------------
    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str, max_tokens: int,
                      temperature: float, timeout: float) -> Completion:
        self.budget.start(timeout, self.config.timeout)
        model = self._ensure_model(timeout)
        start = _mode_memo.get(self.base_url, 0)
        last: Exception | None = None
        for i in range(start, len(MODES)):
            msgs = messages if i < 2 else _schema_in_prompt(messages, schema)
            body: dict[str, Any] = {"model": model, "messages": [wire_message(m) for m in msgs],
                                    "temperature": temperature, "max_tokens": max_tokens, "stream": False}
            fmt = response_format(MODES[i], schema, task)
            if fmt is not None:
                body["response_format"] = fmt
            try:
                out = self._complete(body, timeout, may_reject=fmt is not None)
            except _FormatRejected as exc:
                last = exc
                continue
            _mode_memo[self.base_url] = i
            return out
        raise LLMError(f"{self.base_url} rejected every structured-output mode: {last}")  # pragma: no cover

    def _complete(self, body: dict[str, Any], timeout: float, may_reject: bool) -> Completion:
        resp = self._send("POST", "/chat/completions", body=body, timeout=timeout)
        if may_reject and resp.status_code in (400, 422, 500):
            text = resp.text
            if _REJECTION.search(text):
                raise _FormatRejected(f"HTTP {resp.status_code}: {text[:200]}")
        self._raise_for(resp)
        return self._completion(self._json(resp))

    @staticmethod
    def _completion(data: dict[str, Any]) -> Completion:
        choices = data.get("choices") or []
        choice = choices[0] if isinstance(choices, list) and choices else None
        msg = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(msg, dict):
            raise LLMBadResponse(f"the reply has no choice with a message: {json.dumps(data)[:200]}")
        content = msg.get("content")
        if content is not None and not isinstance(content, str):
            raise LLMBadResponse(f"the reply's content is not text: {json.dumps(data)[:200]}")
        usage = reported_usage(data.get("usage"))
        try:
            calls = _tool_calls(msg.get("tool_calls") if isinstance(msg.get("tool_calls"), list) else None)
        except (AttributeError, TypeError) as exc:
            raise LLMBadResponse(f"the reply's tool calls are malformed: {exc}") from None
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None   # a dict: it has the message
        return Completion(text=content or "", finish_reason=finish, usage=usage,
                          tool_calls=calls)

    # -- chat --------------------------------------------------------------------------
    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        self.budget.start(timeout, self.config.timeout)
        model = self._ensure_model(timeout)
        body: dict[str, Any] = {"model": model, "messages": [wire_message(m) for m in messages],
                                "temperature": temperature, "max_tokens": max_tokens, "stream": stream}
        if tools:
            body["tools"] = [t.openai_dict() for t in tools]
        if stream:   # the usage comes in a last chunk only when asked for (servers that do not know it ignore it)
            body["stream_options"] = {"include_usage": True}
        if not stream:
            resp = self._send("POST", "/chat/completions", body=body, timeout=timeout)
            self._raise_for(resp)
            return self._completion(self._json(resp))
        resp = self._send("POST", "/chat/completions", body=body, timeout=timeout, stream=True)
        return self._stream(open_stream(resp, self._raise_for), timeout)

    def _stream(self, resp: httpx.Response, timeout: float) -> Iterator[ChatChunk]:
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        usage: dict[str, Any] = {}
        for data in sse_events(resp, self.base_url, timeout):
            if isinstance(data.get("usage"), dict):
                usage = reported_usage(data["usage"])
            for choice in data.get("choices") or []:
                delta = choice.get("delta") or {}
                for t in delta.get("tool_calls") or []:
                    slot = calls.setdefault(t.get("index", 0), {"id": None, "name": "", "arguments": ""})
                    slot["id"] = t.get("id") or slot["id"]
                    fn = t.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["arguments"] += fn.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
                if delta.get("content"):
                    yield ChatChunk(text=delta["content"])
        tool_calls = _tool_calls([{"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}}
                                  for _, c in sorted(calls.items())])
        yield ChatChunk(finish_reason=finish or "stop", tool_calls=tool_calls, usage=usage)

    # -- embeddings --------------------------------------------------------------------
    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        """``POST /embeddings`` with every text as ``input``; the answer's ``data[i].index`` orders them."""
        self.budget.start(timeout, self.config.timeout)
        model = self._ensure_model(timeout)
        resp = self._send("POST", "/embeddings", body={"model": model, "input": list(texts),
                                                       "encoding_format": "float"}, timeout=timeout)
        self._raise_for(resp)
        data = self._json(resp).get("data")
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise LLMBadResponse(f"{self.base_url}/embeddings sent no list of embeddings: {resp.text[:200]!r}")
        try:
            ordered = sorted(data, key=lambda d: int(d.get("index", 0)))
        except (TypeError, ValueError):
            raise LLMBadResponse(f"{self.base_url}/embeddings sent a bad index: {resp.text[:200]!r}") from None
        return [d.get("embedding") for d in ordered]

    # -- doctor ------------------------------------------------------------------------
    def probe(self, timeout: float) -> ProbeResult:
        url = f"{self.base_url}/models"
        self.budget.start(timeout, self.config.timeout)
        try:
            models = self.list_models(timeout)
        except LLMError as exc:
            return ProbeResult(url=url, reachable=isinstance(exc, (LLMBadResponse,)) or exc.status is not None,
                               error=exc.message)
        if self.config.model:
            available = self.config.model in models
        else:
            available = bool(models)
            if models:
                self.model = models[0]
        return ProbeResult(url=url, reachable=True, model_available=available, models=models[:20])
