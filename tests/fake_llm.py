"""A scripted LLM backend for tests (in the spirit of simonw/llm's mock model).

Not shipped with kbindex: the test suite registers it as backend ``fake``
through the plugin hook (``KBINDEX_LLM_PLUGINS`` names this file; see
``tests/conftest.py`` and :mod:`kb_indexer.llm.registry`), which also makes it
available to the ``kbindex`` processes the CLI tests start.

In-process::

    fake = FakeBackend()
    fake.queue({"scores": {"1": 9}}, "not json", LLMTimeout("slow"))
    client = LLMClient(resolve(LLMOptions(backend="fake")), conn=conn, backend=fake)
    # from fake_llm import FakeBackend  (tests/ is on sys.path under pytest)

Each call pops the next answer: a ``str`` is the raw text, any other JSON value
is sent as its JSON text, an :class:`LLMError` instance is raised, and a
:class:`Completion` is returned as is. ``fake.calls`` records every request.

Across processes (``--llm-backend fake``): ``KBINDEX_FAKE_LLM`` names a JSON
file holding a list of steps, ``{"text": "..."}``, ``{"json": value}`` or
``{"error": "unavailable" | "timeout" | "auth" | "model_not_found" |
"rate_limited" | "server_error", "message": "..."}``. Each call removes the
first step from the file and appends the request to ``<file>.calls.jsonl``.
A text step may add ``"tool_calls": [{"name", "arguments", "id"?}]`` (the
model asks for tools) and ``"delay": SECONDS`` (a streamed answer waits that
long before each word: time to press Ctrl-C in a terminal test).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from kb_indexer.llm.registry import register
from kb_indexer.llm.base import (ChatChunk, Completion, LLMAuthError, LLMConfigError, LLMError, LLMModelNotFound,
                                 LLMRateLimited, LLMServerError, LLMTimeout, LLMUnavailable, Message, ProbeResult,
                                 Tool, ToolCall)

ERRORS = {"unavailable": LLMUnavailable, "timeout": LLMTimeout, "auth": LLMAuthError,
          "model_not_found": LLMModelNotFound, "rate_limited": LLMRateLimited, "server_error": LLMServerError}


class FakeBackend:
    name = "fake"

    def __init__(self, answers: list[Any] | None = None, *, model: str = "fake-model", script: Path | None = None):
        self.model = model
        self.answers: list[Any] = list(answers or [])
        self.calls: list[dict[str, Any]] = []
        self.script = script
        self.delay = 0.0         # seconds before each streamed word (a script step's "delay")

    @classmethod
    def from_env(cls, config: Any = None) -> "FakeBackend":
        path = os.environ.get("KBINDEX_FAKE_LLM")
        if not path:
            raise LLMConfigError("the fake backend needs KBINDEX_FAKE_LLM (a JSON file of scripted answers)")
        return cls(model=getattr(config, "model", None) or "fake-model", script=Path(path))

    def queue(self, *answers: Any) -> "FakeBackend":
        self.answers.extend(answers)
        return self

    def close(self) -> None:
        pass

    # -- scripting ---------------------------------------------------------------------
    def _record(self, call: dict[str, Any]) -> None:
        self.calls.append(call)
        if self.script is not None:
            with open(str(self.script) + ".calls.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(call, ensure_ascii=False) + "\n")

    def _next(self) -> Any:
        if self.script is not None:
            steps = json.loads(self.script.read_text(encoding="utf-8"))
            if not steps:
                raise LLMError("fake backend: the script has no answers left", code="fake_exhausted")
            step, rest = steps[0], steps[1:]
            self.script.write_text(json.dumps(rest), encoding="utf-8")
            if "error" in step:
                cls = ERRORS.get(step["error"], LLMError)
                raise cls(step.get("message") or f"fake {step['error']}")
            self.delay = float(step.get("delay") or 0)
            if step.get("tool_calls"):
                calls = [ToolCall(c["name"], c.get("arguments") or {}, c.get("id") or f"call-{i}")
                         for i, c in enumerate(step["tool_calls"])]
                return Completion(text=step.get("text") or "", finish_reason="tool_calls", tool_calls=calls)
            return step["text"] if "text" in step else json.dumps(step.get("json"))
        if not self.answers:
            raise LLMError("fake backend: no answer queued", code="fake_exhausted")
        return self.answers.pop(0)

    def _answer(self) -> Completion:
        answer = self._next()
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, Completion):
            return answer
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Completion(text=text, finish_reason="stop", usage={"completion_tokens": len(text.split())})

    # -- the protocol ------------------------------------------------------------------
    def complete_json(self, messages: list[Message], schema: dict[str, Any], *, task: str, max_tokens: int,
                      temperature: float, timeout: float) -> Completion:
        self._record({"kind": "complete_json", "task": task, "messages": [m.to_dict() for m in messages],
                      "schema": schema, "max_tokens": max_tokens, "temperature": temperature, "timeout": timeout})
        return self._answer()

    def chat(self, messages: list[Message], *, tools: list[Tool] | None = None, max_tokens: int,
             temperature: float, timeout: float, stream: bool = False) -> Completion | Iterator[ChatChunk]:
        self._record({"kind": "chat", "messages": [m.to_dict() for m in messages], "stream": stream,
                      "tools": [t.name for t in tools or []], "max_tokens": max_tokens,
                      "temperature": temperature, "timeout": timeout})
        completion = self._answer()
        if not stream:
            return completion
        return self._chunks(completion)

    def _chunks(self, completion: Completion) -> Iterator[ChatChunk]:
        import time

        delay, words = self.delay, completion.text.split(" ")
        for i, word in enumerate(words):
            if delay and i:
                time.sleep(delay)
            yield ChatChunk(text=word if i == len(words) - 1 else word + " ")
        yield ChatChunk(finish_reason=completion.finish_reason or "stop", tool_calls=completion.tool_calls,
                        usage=completion.usage)

    def probe(self, timeout: float) -> ProbeResult:
        return ProbeResult(url=str(self.script) if self.script else "memory://fake", reachable=True,
                           model_available=True, models=[self.model])


register("fake", FakeBackend.from_env, default_model="fake-model", schema_in_prompt=True)


# -- a deterministic embedding double: backend "fake-embed" ----------------------------------

#: Words the fake embedder treats as one (a stand-in for what a real model knows).
SYNONYMS = {"car": "automobile", "cars": "automobile", "automobiles": "automobile", "vehicle": "automobile",
            "doggy": "dog", "puppy": "dog", "hound": "dog", "fast": "quick", "rapid": "quick", "speedy": "quick"}


def fake_vector(text: str, dim: int) -> list[float]:
    """Bag of words hashed into ``dim`` buckets (synonyms share a bucket); never all zero."""
    import hashlib
    import re

    out = [0.0] * dim
    out[0] = 0.01
    for word in re.findall(r"\w+", text.lower()):
        word = SYNONYMS.get(word, word)
        if len(word) < 3:
            continue
        out[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    return out


class FakeEmbedder:
    """``embed`` only. Model ``fake-embed-<dim>`` (default 64 dimensions). ``KBINDEX_FAKE_EMBED`` may name a
    JSON file ``{"delay": seconds per call, "fail_after": calls, "error": kind}``; each call is appended to
    ``<file>.calls.jsonl``."""

    name = "fake-embed"

    def __init__(self, config: Any = None):
        self.model = getattr(config, "model", None) or "fake-embed-64"
        self.dim = int(self.model.rsplit("-", 1)[-1]) if self.model.rsplit("-", 1)[-1].isdigit() else 64
        path = os.environ.get("KBINDEX_FAKE_EMBED")
        self.script = Path(path) if path else None
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str], *, timeout: float) -> list[list[float]]:
        import time

        self.calls.append(list(texts))
        if self.script is not None:
            conf = json.loads(self.script.read_text(encoding="utf-8")) if self.script.exists() else {}
            log = Path(str(self.script) + ".calls.jsonl")
            done = len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0
            if conf.get("fail_after") is not None and done >= conf["fail_after"]:
                raise ERRORS.get(conf.get("error", "unavailable"), LLMError)("fake embedder down")
            time.sleep(float(conf.get("delay") or 0))
            with log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(texts) + "\n")
        return [fake_vector(t, self.dim) for t in texts]

    def probe(self, timeout: float) -> ProbeResult:
        return ProbeResult(url="memory://fake-embed", reachable=True, model_available=True, models=[self.model])

    def close(self) -> None:
        pass


register("fake-embed", FakeEmbedder, default_embed_model="fake-embed-64")
