"""The one way features call an LLM: :class:`LLMClient`.

``LLMClient.structured(task, messages, schema, max_tokens=...)`` does, in order:

1. refuse a schema that is unbounded or uses keywords the validator cannot check;
2. cap ``max_tokens`` (small models otherwise repeat one array item thousands of
   times) and use temperature 0 unless told otherwise;
3. look the answer up in the cache (``llm_cache``) unless caching is off; the
   key names the configured model (or ``server-default@URL`` when the server
   picks it), so a cache hit needs no network;
4. call the backend, retrying 429 / 5xx / connection errors with exponential
   backoff (honouring ``Retry-After``). The timeout is a DEADLINE for the whole
   call: every attempt gets only the time left, a backoff that would end past
   the deadline is not waited for, and the repair attempt shares the deadline;
5. parse and validate the answer against the schema (plus the caller's own
   ``check``); on failure, ask once more showing the model its errors (the repair
   attempt); if that fails too, raise :class:`LLMBadResponse` so the caller can
   use its fallback;
6. store the validated answer in the cache.

Any other exception a backend lets through (an SDK's parse or validation
error) becomes :class:`LLMBadResponse`, so callers only ever see ``LLMError``.

Ctrl-C is never caught here: ``KeyboardInterrupt`` propagates, and the cache
write is a transaction, so an interrupted command leaves nothing half-written.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Iterator, cast

from kb_indexer.errors import KbError
from kb_indexer.llm import cache as llm_cache
from kb_indexer.llm import registry
from kb_indexer.llm.base import (Backend, ChatChunk, Completion, LLMBadResponse, LLMError, LLMTimeout, Message,
                                 StructuredResult, Tool, as_messages, with_system_note)
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.schema import check_schema, parse_json, schema_text, validate
from kb_indexer.llm.settings import LLMConfig
from kb_indexer.notices import warn
from kb_indexer.store.dbapi import Connection

BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
REPAIR_ECHO_CHARS = 1200

Check = Callable[[Any], list[str]]


def _schema_in_prompt(backend: str) -> bool:
    """Whether the prompt quotes the schema (a registry setting). Gemini and OpenAI-compatible servers
    get it as a parameter (the openai backend adds it to the prompt itself when a server has no schema
    mode); Ollama's documentation recommends also grounding the model with the schema in the prompt."""
    try:
        return registry.get(backend).schema_in_prompt
    except KbError:
        return False


class LLMClient:
    """A backend with its settings, the cache and the call policy."""

    def __init__(self, config: LLMConfig, *, conn: Connection | None = None, backend: Any = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.conn = conn
        self._backend: Backend | None = backend
        self._sleep = sleep
        self._deadline: float | None = None
        self.cache_hits = 0
        self.cache_misses = 0

    @classmethod
    def from_options(cls, opts: LLMOptions | None = None, conn: Connection | None = None) -> "LLMClient":
        return cls(resolve(opts), conn=conn)

    # -- identity ----------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.config.enabled

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            made: Backend = registry.make_backend(self.config)
            self._backend = made
        return self._backend

    @property
    def model(self) -> str | None:
        """The model that answers: the configured one, or the one the server named; None when unknown."""
        if self._backend is not None:
            return getattr(self._backend, "model", None) or self.config.model
        return self.config.model

    def _cache_model(self) -> str:
        """The model part of the cache key, known without asking the server (a cache hit needs no
        network): the configured model, else the server's default named by its URL (by the backend's
        name when it has no URL, never ``server-default@None``)."""
        if self.config.model:
            return self.config.model
        return f"server-default@{self.config.base_url or self.config.backend}"

    def report(self, *, used: bool, fallback: str | None = None, error: str | None = None) -> dict[str, Any]:
        """The ``"llm"`` object every LLM-using command puts in its JSON."""
        return {"backend": self.config.backend, "model": self.model if self.enabled else None, "used": used,
                "fallback": fallback, "error": error}

    def cache_report(self) -> dict[str, int]:
        return {"hits": self.cache_hits, "misses": self.cache_misses}

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    # -- deadline and retries -----------------------------------------------------------
    def _start(self) -> None:
        """A call starts: it may take ``config.timeout`` seconds in all."""
        self._deadline = time.monotonic() + self.config.timeout

    def _left(self) -> float:
        """Seconds left for the current call; LLMTimeout when none are."""
        if self._deadline is None:
            return self.config.timeout
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise LLMTimeout(f"{self.config.backend}: no valid answer within {self.config.timeout:g}s")
        return left

    def _with_retries(self, fn: Callable[[float], Any]) -> tuple[Any, int]:
        """``fn(seconds_left)`` with retries on retryable errors, all within the call's deadline."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return _guarded(fn, self._left()), attempt
            except LLMError as exc:
                if not exc.retryable or attempt > self.config.retries:
                    raise
                delay = min(BACKOFF_MAX, BACKOFF_BASE * (2 ** (attempt - 1)))
                delay *= 0.8 + 0.4 * random.random()
                if exc.retry_after is not None:
                    delay = max(delay, exc.retry_after)
                left = self._left()
                if delay >= left:  # the retry could not finish in time: give up now, not at the deadline
                    raise
                warn(f"{self.config.backend}: {exc.message} "  # the server's text: made terminal-safe
                     f"(retry {attempt}/{self.config.retries} in {delay:.1f}s)")
                self._sleep(delay)

    def call(self, fn: Callable[[float], Any]) -> tuple[Any, int]:
        """``fn(seconds_left)`` as one call: a fresh deadline of ``config.timeout``, retried on retryable
        errors within it, any other error an ``LLMError``; returns (its result, attempts)."""
        _guarded(lambda _left: self.backend, 0.0)  # imports its SDK: not part of the deadline
        self._start()
        return self._with_retries(fn)

    # -- structured completion ---------------------------------------------------------
    def structured(self, task: str, messages: list[Message] | list[dict[str, Any]], schema: dict[str, Any], *,
                   max_tokens: int, temperature: float = 0.0, check: Check | None = None,
                   use_cache: bool | None = None) -> StructuredResult:
        """A validated JSON answer for ``task`` (see the module docstring for the steps)."""
        check_schema(schema)
        if not self.enabled:
            raise LLMError("the LLM is disabled (backend 'none')", code="llm_disabled")
        msgs = _with_schema_instruction(as_messages(messages), schema,
                                        full=_schema_in_prompt(self.config.backend))
        max_tokens = max(1, min(int(max_tokens), self.config.max_tokens_cap))
        use_cache = self.config.use_cache if use_cache is None else use_cache
        prompt_hash = llm_cache.digest({"messages": [m.to_dict() for m in msgs], "max_tokens": max_tokens,
                                        "temperature": temperature})
        schema_hash = llm_cache.digest(schema)
        key = llm_cache.cache_key(self.config.backend, self._cache_model(), task, prompt_hash, schema_hash)
        if use_cache and self.conn is not None:
            hit = llm_cache.get(self.conn, key)
            if hit is not None and not _problems(hit, schema, check):
                self.cache_hits += 1
                return StructuredResult(data=hit, backend=self.config.backend,
                                        model=self.model or self._cache_model(), task=task, cached=True,
                                        attempts=0)
            self.cache_misses += 1

        backend = _guarded(lambda _left: self.backend, 0.0)  # imports its SDK: not part of the deadline
        self._start()
        started = time.monotonic()

        def call(ms: list[Message]) -> Callable[[float], Completion]:
            return lambda left: backend.complete_json(ms, schema, task=task, max_tokens=max_tokens,
                                                      temperature=temperature, timeout=left)

        completion, attempts = self._with_retries(call(msgs))
        data, problems = _interpret(completion, schema, check, max_tokens)
        repaired = False
        if problems:
            repair = msgs + [Message("assistant", (completion.text or "")[:REPAIR_ECHO_CHARS]),
                             Message("user", _repair_prompt(problems))]
            completion, more = self._with_retries(call(repair))
            attempts += more
            data, problems = _interpret(completion, schema, check, max_tokens)
            repaired = True
            if problems:
                raise LLMBadResponse("invalid answer after one repair attempt: " + "; ".join(problems[:5]),
                                     details={"problems": problems[:10],
                                              "answer_start": (completion.text or "")[:200]})
        result = StructuredResult(data=data, backend=self.config.backend, model=self.model or self._cache_model(),
                                  task=task, attempts=attempts, repaired=repaired,
                                  latency_ms=round((time.monotonic() - started) * 1000, 1),
                                  usage=completion.usage)
        if use_cache and self.conn is not None:
            llm_cache.put(self.conn, key, backend=self.config.backend, model=self._cache_model(), task=task,
                          prompt_hash=prompt_hash, schema_hash=schema_hash, response=data)
        return result

    # -- chat --------------------------------------------------------------------------
    def chat(self, messages: list[Message] | list[dict[str, Any]], *, tools: list[Tool] | None = None,
             max_tokens: int = 1024, temperature: float = 0.7) -> Completion:
        """One chat turn (not cached), retried on 429 / 5xx / connection errors."""
        if not self.enabled:
            raise LLMError("the LLM is disabled (backend 'none')", code="llm_disabled")
        msgs = as_messages(messages)
        max_tokens = max(1, min(int(max_tokens), self.config.max_tokens_cap))
        _guarded(lambda _left: self.backend, 0.0)
        self._start()
        completion: Completion
        completion, _ = self._with_retries(lambda left: self.backend.chat(
            msgs, tools=tools, max_tokens=max_tokens, temperature=temperature, timeout=left))
        return completion

    def stream_chat(self, messages: list[Message] | list[dict[str, Any]], *, tools: list[Tool] | None = None,
                    max_tokens: int = 1024, temperature: float = 0.7) -> Iterator[ChatChunk]:
        """A streamed chat turn. Opening the stream is retried; a stream that breaks midway raises.
        The timeout bounds the whole stream (a server that streams without end is cut off there)."""
        if not self.enabled:
            raise LLMError("the LLM is disabled (backend 'none')", code="llm_disabled")
        msgs = as_messages(messages)
        max_tokens = max(1, min(int(max_tokens), self.config.max_tokens_cap))

        def open_stream(left: float) -> tuple[ChatChunk | None, Iterator[ChatChunk]]:
            it = iter(cast(Iterator[ChatChunk], self.backend.chat(  # stream=True: the chunks
                msgs, tools=tools, max_tokens=max_tokens, temperature=temperature, timeout=left, stream=True)))
            return next(it, None), it

        _guarded(lambda _left: self.backend, 0.0)
        self._start()
        (first, rest), _ = self._with_retries(open_stream)
        if first is not None:
            yield first
            yield from rest


def _guarded(fn: Callable[[float], Any], left: float) -> Any:
    """``fn(left)``, with any error a backend or its SDK lets through turned into an ``LLMError``."""
    try:
        return fn(left)
    except KbError:
        raise
    except Exception as exc:  # not BaseException: Ctrl-C and SystemExit propagate
        raise LLMBadResponse(f"the backend failed: {type(exc).__name__}: {str(exc)[:300]}") from None


def _with_schema_instruction(msgs: list[Message], schema: dict[str, Any], full: bool = True) -> list[Message]:
    """Ask for bare JSON in the system message; with ``full``, quote the schema there too."""
    note = "Answer with one JSON value only, no prose and no code fence"
    note += (", matching this JSON schema: " + schema_text(schema)) if full else "."
    return with_system_note(msgs, note, sep="\n\n")


def _problems(data: Any, schema: dict[str, Any], check: Check | None) -> list[str]:
    problems = validate(data, schema)
    if not problems and check is not None:
        problems = list(check(data) or [])
    return problems


def _interpret(completion: Completion, schema: dict[str, Any], check: Check | None,
               max_tokens: int) -> tuple[Any, list[str]]:
    data, error = parse_json(completion.text)
    if error:
        if completion.finish_reason in ("length", "max_tokens", "MAX_TOKENS"):
            return None, [f"the answer was cut off at {max_tokens} tokens ({error}); answer much more briefly"]
        return None, [error]
    problems = _problems(data, schema, check)
    return data, problems


def _repair_prompt(problems: list[str]) -> str:
    return ("Your previous answer was not acceptable:\n- " + "\n- ".join(problems[:8])
            + "\nReply again with only the corrected JSON value, following the schema exactly.")
