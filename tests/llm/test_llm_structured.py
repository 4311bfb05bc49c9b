"""The shared call wrapper: caps, cache, retries with backoff, validation, repair, fallback, Ctrl-C."""

from __future__ import annotations

import json

import pytest

from kb_indexer.llm import cache as llm_cache
from kb_indexer.llm.base import (Completion, LLMAuthError, LLMBadResponse, LLMRateLimited, LLMServerError,
                                 LLMTimeout, LLMUnavailable)
from kb_indexer.llm.config import LLMOptions, resolve
from fake_llm import FakeBackend
from kb_indexer.llm.structured import LLMClient

SCHEMA = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 20},
                                                    "maxItems": 3}},
          "required": ["tags"], "additionalProperties": False}
MESSAGES = [{"role": "system", "content": "Tag the text."}, {"role": "user", "content": "reinforcement learning"}]


def make_client(conn=None, *answers, retries=2, no_cache=False):
    fake = FakeBackend(list(answers))
    sleeps: list[float] = []
    config = resolve(LLMOptions(backend="fake", no_cache=no_cache, retries=retries))
    return LLMClient(config, conn=conn, backend=fake, sleep=sleeps.append), fake, sleeps


def test_request_has_schema_cap_and_temperature_zero(empty_kb):
    client, fake, _ = make_client(empty_kb.conn, {"tags": ["rl"]})
    result = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=100_000)
    assert result.data == {"tags": ["rl"]} and not result.cached and result.attempts == 1
    call = fake.calls[0]
    assert call["schema"] == SCHEMA
    assert call["max_tokens"] == client.config.max_tokens_cap == 1024  # capped
    assert call["temperature"] == 0.0
    assert 59 < call["timeout"] <= 60.0  # what is left of the 60 s deadline
    system = call["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Tag the text.")
    assert json.dumps(SCHEMA, separators=(",", ":")) in system["content"]  # schema stated in the prompt too


def test_cache_hit_on_second_call_and_no_cache_bypasses(empty_kb):
    conn = empty_kb.conn
    client, fake, _ = make_client(conn, {"tags": ["rl"]}, {"tags": ["other"]})
    first = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=50)
    second = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=50)
    assert second.cached and second.data == first.data and len(fake.calls) == 1
    assert client.cache_report() == {"hits": 1, "misses": 1}
    row = conn.execute("SELECT backend, model, task, hits FROM llm_cache").fetchone()
    assert tuple(row) == ("fake", "fake-model", "tagging", 1)
    # another task, prompt, schema or token cap is another key
    client.structured("tagging", MESSAGES, SCHEMA, max_tokens=51)
    assert len(fake.calls) == 2
    nocache, fake2, _ = make_client(conn, {"tags": ["fresh"]}, no_cache=True)
    assert nocache.structured("tagging", MESSAGES, SCHEMA, max_tokens=50).data == {"tags": ["fresh"]}
    assert nocache.cache_report() == {"hits": 0, "misses": 0}


def test_cache_key_covers_every_part():
    base = llm_cache.cache_key("ollama", "m", "t", "p", "s")
    for variant in (("gemini", "m", "t", "p", "s"), ("ollama", "m2", "t", "p", "s"), ("ollama", "m", "t2", "p", "s"),
                    ("ollama", "m", "t", "p2", "s"), ("ollama", "m", "t", "p", "s2")):
        assert llm_cache.cache_key(*variant) != base


@pytest.mark.parametrize("error", [LLMRateLimited("slow down", retry_after=3.0), LLMServerError("boom"),
                                   LLMUnavailable("refused")])
def test_retryable_errors_are_retried_with_backoff(empty_kb, error, capsys):
    client, fake, sleeps = make_client(empty_kb.conn, error, error, {"tags": []})
    result = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert result.data == {"tags": []} and result.attempts == 3
    assert len(sleeps) == 2
    if error.retry_after:
        assert all(s >= 3.0 for s in sleeps)  # the server's Retry-After wins
    else:
        assert 0.4 <= sleeps[0] < sleeps[1] <= 1.2  # exponential, with jitter
    assert "retry 1/2" in capsys.readouterr().err


def test_retries_give_up_after_the_limit(empty_kb):
    client, fake, sleeps = make_client(empty_kb.conn, *[LLMServerError("down")] * 5, retries=2)
    with pytest.raises(LLMServerError):
        client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert len(fake.calls) == 3 and len(sleeps) == 2


@pytest.mark.parametrize("error", [LLMAuthError("bad key"), LLMTimeout("slow")])
def test_non_retryable_errors_fail_at_once(empty_kb, error):
    client, fake, sleeps = make_client(empty_kb.conn, error, {"tags": []})
    with pytest.raises(type(error)):
        client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert len(fake.calls) == 1 and sleeps == []


def test_one_repair_attempt_fixes_invalid_json(empty_kb):
    client, fake, _ = make_client(empty_kb.conn, '{"tags": ["a",', {"tags": ["a"]})
    result = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert result.data == {"tags": ["a"]} and result.repaired and result.attempts == 2
    repair = fake.calls[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"tags": ["a",'}
    assert repair[-1]["role"] == "user" and "invalid JSON" in repair[-1]["content"]


def test_schema_violation_is_repaired_then_raised(empty_kb):
    too_many = {"tags": ["a", "b", "c", "d"]}
    client, fake, _ = make_client(empty_kb.conn, too_many, too_many)
    with pytest.raises(LLMBadResponse) as exc:
        client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert "more than 3" in exc.value.message and len(fake.calls) == 2
    assert "more than 3" in fake.calls[1]["messages"][-1]["content"]
    assert empty_kb.conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0  # failures are not cached


def test_runaway_output_cut_at_the_cap_is_rejected(empty_kb):
    runaway = Completion(text='{"tags": [' + '"loop", ' * 4000, finish_reason="length")
    client, fake, _ = make_client(empty_kb.conn, runaway, runaway)
    with pytest.raises(LLMBadResponse, match="cut off at 20 tokens"):
        client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert len(fake.calls[1]["messages"][-2]["content"]) <= 1200  # the echo is truncated


def test_caller_check_is_part_of_validation(empty_kb):
    client, fake, _ = make_client(empty_kb.conn, {"tags": ["x"]}, {"tags": ["rl"]})
    result = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20,
                               check=lambda d: [] if "rl" in d["tags"] else ["must contain rl"])
    assert result.data == {"tags": ["rl"]} and "must contain rl" in fake.calls[1]["messages"][-1]["content"]


def test_unbounded_schema_is_a_programming_error(empty_kb):
    client, fake, _ = make_client(empty_kb.conn, {"tags": []})
    with pytest.raises(ValueError, match="maxItems"):
        client.structured("t", MESSAGES, {"type": "array", "items": {"type": "string"}}, max_tokens=10)
    assert fake.calls == []


def test_ctrl_c_propagates_and_writes_nothing(empty_kb):
    client, fake, _ = make_client(empty_kb.conn, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        client.structured("tagging", MESSAGES, SCHEMA, max_tokens=20)
    assert empty_kb.conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0
    assert not empty_kb.conn.in_transaction


def test_chat_and_stream_through_the_client():
    client, fake, _ = make_client(None, "hello there world", "streamed answer here")
    assert client.chat([{"role": "user", "content": "hi"}], max_tokens=5000).text == "hello there world"
    assert fake.calls[0]["max_tokens"] == 1024 and fake.calls[0]["kind"] == "chat"
    chunks = list(client.stream_chat([{"role": "user", "content": "hi"}]))
    assert "".join(c.text for c in chunks) == "streamed answer here"
    assert chunks[-1].finish_reason == "stop"


def test_disabled_backend_refuses_calls():
    client = LLMClient(resolve(LLMOptions(backend="none")))
    assert not client.enabled
    with pytest.raises(Exception, match="disabled"):
        client.structured("t", MESSAGES, SCHEMA, max_tokens=10)


def test_only_a_refused_connection_is_unavailable_without_retries():
    """A transport error raised from a refused connection is final; a reset or a DNS failure may pass."""
    from kb_indexer.llm.base import connection_refused

    def raised_from(cause: BaseException) -> BaseException:
        try:
            try:
                raise cause
            except OSError as inner:
                raise RuntimeError("transport failed") from inner
        except RuntimeError as outer:
            return outer

    refused = raised_from(ConnectionRefusedError(111, "Connection refused"))
    reset = raised_from(ConnectionResetError(104, "Connection reset by peer"))
    assert connection_refused(refused) and not connection_refused(reset)
    assert LLMUnavailable.from_transport("cannot reach", refused).retryable is False
    assert LLMUnavailable.from_transport("cannot reach", reset).retryable is True


@pytest.mark.parametrize("depth", [100, 951, 5000])   # parsed (100, 951: validation recursed) or not (5000)
def test_an_answer_nested_thousands_deep_is_invalid_and_repaired(empty_kb, depth):
    deep = '{"tags": ' + "[" * depth + "]" * depth + "}"
    client, fake, _ = make_client(empty_kb.conn, deep, {"tags": ["a"]})
    result = client.structured("tagging", MESSAGES, SCHEMA, max_tokens=50)
    assert result.data == {"tags": ["a"]} and result.repaired and result.attempts == 2
    assert "nested too deeply" in fake.calls[1]["messages"][-1]["content"]
    again, _, _ = make_client(empty_kb.conn, deep, deep, no_cache=True)
    with pytest.raises(LLMBadResponse):
        again.structured("tagging", MESSAGES, SCHEMA, max_tokens=50)
