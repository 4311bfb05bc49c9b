"""Ollama (the default): the official ``ollama`` client, structured output via ``format=<schema>``.

The server is ``OLLAMA_HOST`` (default http://127.0.0.1:11434). Generation
settings go in ``options``: ``temperature`` and ``num_predict`` (the token cap).
The SDK's httpx client's transports are wrapped in :class:`~kb_indexer.llm.guard.GuardedTransport`,
so ``timeout`` is a deadline for the whole call and answers are size-capped; an
answer the SDK cannot parse (not JSON, no ``message``) is an ``LLMBadResponse``.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

import httpx
import ollama

from kb_indexer.llm.base import (ChatChunk, Completion, LLMBadResponse, LLMError, LLMTimeout, LLMUnavailable, Message,
                                 ProbeResult, Tool, ToolCall, error_for_status)
from kb_indexer.llm.settings import LLMConfig, ollama_host
from kb_indexer.llm.guard import Budget, guard_client


def wire_message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"function": {"name": t.name, "arguments": t.arguments}} for t in m.tool_calls]
    if m.role == "tool" and m.name:
        out["tool_name"] = m.name
    return out


def _tool_calls(msg: Any) -> list[ToolCall]:
    out = []
    for t in getattr(msg, "tool_calls", None) or []:
        args = t.function.arguments
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"_raw": args}
        out.append(ToolCall(name=t.function.name, arguments=dict(args or {})))
    return out


def _usage(resp: Any) -> dict[str, int]:
    usage = {}
    if getattr(resp, "prompt_eval_count", None) is not None:
        usage["prompt_tokens"] = resp.prompt_eval_count
    if getattr(resp, "eval_count", None) is not None:
        usage["completion_tokens"] = resp.eval_count
    return usage


class OllamaBackend:
    name = "ollama"

    def __init__(self, config: LLMConfig, **client_kwargs: Any):
        self.config = config
        self.model = config.model or "llama3.2:3b"
        self.host = config.base_url or ollama_host(None)
        self.budget = Budget()
        auth = {"authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = ollama.Client(host=self.host, timeout=config.timeout, headers=auth, **client_kwargs)
        if not config.api_key:  # the SDK adds OLLAMA_API_KEY from os.environ by itself; config decides
            self._client._client.headers.pop("authorization", None)
        guard_client(self._client._client, self.budget)

    def _start(self, timeout: float) -> None:
        """The call starting now may take ``timeout`` seconds in all."""
        self.budget.start(timeout, self.config.timeout)
        self._client._client.timeout = httpx.Timeout(timeout)

    def close(self) -> None:
        try:
            self._client._client.close()
        except Exception:  # pragma: no cover - closing is best effort
            pass

    @contextmanager
    def _errors(self, timeout: float) -> Iterator[None]:
        try:
            yield
        except LLMError:
            raise
        except ollama.ResponseError as exc:
            raise error_for_status(exc.status_code, str(exc.error), model=self.model) from None
        except ConnectionError as exc:  # the client's wrapper around httpx.ConnectError
            raise LLMUnavailable.from_transport(f"cannot reach Ollama at {self.host}: {exc}", exc) from None
        except httpx.TimeoutException as exc:
            raise LLMTimeout(f"no answer from Ollama at {self.host} within {timeout:g}s "
                             f"({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise LLMUnavailable.from_transport(f"connection to Ollama at {self.host} failed: {exc}", exc) from None
        except httpx.HTTPError as exc:
            raise LLMBadResponse(f"bad HTTP answer from Ollama at {self.host}: {exc}") from None
        except (ValueError, TypeError, AttributeError, KeyError) as exc:  # JSON and pydantic errors included
            raise LLMBadResponse(f"Ollama at {self.host} sent an answer that is not a chat response: "
                                 f"{type(exc).__name__}: {str(exc)[:200]}") from None

    def _options(self, max_tokens: int, temperature: float) -> dict[str, Any]:
        return {"temperature": temperature, "num_predict": max_tokens}

    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str, max_tokens: int,
                      temperature: float, timeout: float) -> Completion:
        self._start(timeout)
        with self._errors(timeout):
            resp = self._client.chat(model=self.model, messages=[wire_message(m) for m in messages],
                                     format=schema, options=self._options(max_tokens, temperature), stream=False)
            return Completion(text=resp.message.content or "", finish_reason=resp.done_reason, usage=_usage(resp))

    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        self._start(timeout)
        kwargs: dict[str, Any] = {"model": self.model, "messages": [wire_message(m) for m in messages],
                                  "options": self._options(max_tokens, temperature), "stream": stream}
        if tools:
            kwargs["tools"] = [t.openai_dict() for t in tools]
        if not stream:
            with self._errors(timeout):
                resp = self._client.chat(**kwargs)
                return Completion(text=resp.message.content or "", finish_reason=resp.done_reason,
                                  usage=_usage(resp), tool_calls=_tool_calls(resp.message))
        return self._stream(kwargs, timeout)

    def _stream(self, kwargs: dict[str, Any], timeout: float) -> Iterator[ChatChunk]:
        tool_calls: list[ToolCall] = []
        finish, usage = None, {}
        with self._errors(timeout):
            for part in self._client.chat(**kwargs):
                tool_calls.extend(_tool_calls(part.message))
                if part.message.content:
                    yield ChatChunk(text=part.message.content)
                if part.done:
                    finish, usage = part.done_reason, _usage(part)
        yield ChatChunk(finish_reason=finish or "stop", tool_calls=tool_calls, usage=usage)

    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        """``POST /api/embed`` with every text as ``input`` (Ollama normalises the vectors itself)."""
        self._start(timeout)
        with self._errors(timeout):
            resp = self._client.embed(model=self.model, input=list(texts))
            return [list(v) for v in resp.embeddings]

    def probe(self, timeout: float) -> ProbeResult:
        url = f"{self.host}/api/tags"
        self._start(timeout)
        try:
            with self._errors(timeout):
                listing = self._client.list()
                names = [m.model for m in listing.models if m.model]
        except LLMError as exc:
            reachable = exc.status is not None or isinstance(exc, LLMBadResponse)
            return ProbeResult(url=url, reachable=reachable, error=exc.message)
        wanted = self.model if ":" in self.model else self.model + ":latest"
        return ProbeResult(url=url, reachable=True, model_available=wanted in names or self.model in names,
                           models=names[:20])
