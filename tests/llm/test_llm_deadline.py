"""The LLM timeout is a deadline for the whole call, answers are size-capped, and bad settings are usage
errors (issue 8 items 9 and 10, issue 17 item 8). No timing asserts: waits are recorded, not measured."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_llm import FakeBackend

from kb_indexer.errors import UsageError
from kb_indexer.llm.base import (LLMBadResponse, LLMError, LLMRateLimited, LLMServerError, LLMTimeout,
                                 LLMUnavailable)
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.guard import Budget
from kb_indexer.llm.structured import LLMClient

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.stress_llm import MODEL, PROTOCOLS, FaultServer, endpoint_env  # noqa: E402

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": False}
ASK = [{"role": "user", "content": "ok?"}]


class Clock:
    """A fake monotonic clock that the fake sleep advances."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s


def _client(*answers, timeout=5.0, retries=2, clock=None):
    fake = FakeBackend(list(answers))
    config = resolve(LLMOptions(backend="fake", timeout=timeout, retries=retries, no_cache=True))
    return LLMClient(config, backend=fake, sleep=clock.sleep if clock else (lambda s: None)), fake


def test_a_retry_after_beyond_the_deadline_is_not_waited_for(monkeypatch):
    # Before: two 429s with Retry-After: 8 slept 8 s each, far beyond --llm-timeout 5.
    clock = Clock()
    monkeypatch.setattr("kb_indexer.llm.structured.time.monotonic", clock.monotonic)
    client, fake = _client(LLMRateLimited("slow down", retry_after=8), LLMRateLimited("again", retry_after=8),
                           {"ok": True}, timeout=5.0, clock=clock)
    with pytest.raises(LLMRateLimited):
        client.structured("t", ASK, SCHEMA, max_tokens=8)
    assert clock.sleeps == [] and len(fake.calls) == 1


def test_retries_and_backoff_stay_within_the_deadline(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("kb_indexer.llm.structured.time.monotonic", clock.monotonic)
    client, fake = _client(*[LLMServerError("boom")] * 10, timeout=1.0, retries=10, clock=clock)
    with pytest.raises(LLMError):
        client.structured("t", ASK, SCHEMA, max_tokens=8)
    assert sum(clock.sleeps) < 1.0
    assert all(0 < c["timeout"] <= 1.0 for c in fake.calls)  # each attempt gets only what is left


def test_each_attempt_gets_what_is_left_and_an_expired_call_stops(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("kb_indexer.llm.structured.time.monotonic", clock.monotonic)

    class Slow(FakeBackend):
        def complete_json(self, *a, **kw):
            clock.now += 3.0  # every attempt uses 3 s of a 5 s budget
            return super().complete_json(*a, **kw)

    slow = Slow(["not json", "still not json"])
    client = LLMClient(resolve(LLMOptions(backend="fake", timeout=5.0, no_cache=True)), backend=slow,
                       sleep=clock.sleep)
    with pytest.raises(LLMError):
        client.structured("t", ASK, SCHEMA, max_tokens=8)
    assert [round(c["timeout"], 3) for c in slow.calls] == [5.0, 2.0]  # the repair got what was left


def test_an_unexpected_backend_exception_becomes_a_bad_response():
    client, _ = _client(ValueError("pydantic said no"))
    with pytest.raises(LLMBadResponse, match="ValueError"):
        client.structured("t", ASK, SCHEMA, max_tokens=8)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "0", "-1"])
def test_non_finite_or_non_positive_timeout_is_a_usage_error(value, monkeypatch):
    with pytest.raises(UsageError):
        resolve(LLMOptions(backend="none", timeout=float(value)))
    monkeypatch.setenv("KBINDEX_LLM_TIMEOUT", value)
    with pytest.raises(UsageError):
        resolve(LLMOptions(backend="none"))


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_cli_llm_timeout_nan_or_inf_is_usage_not_internal(similar_kb, run, cli, value):
    args = ("similar", "reinforcement learning", "--user-context", "games", "--llm-timeout", value,
            "--db", similar_kb.db_path, "--format", "json")
    res = run(*args)
    assert res.returncode == 2, res.stderr
    assert res.error()["code"] == "usage" and res.stdout == ""
    inproc = cli(*args)
    assert inproc.exit_code == 2


def test_no_backend_reports_no_model_placeholder(similar_kb, cli):
    res = cli("similar", "reinforcement learning", "--user-context", "games", "--llm-backend", "none",
              "--db", similar_kb.db_path, "--format", "json")
    assert res.exit_code == 0
    llm = json.loads(res.stdout)["llm"]
    assert llm["backend"] == "none" and llm["model"] is None   # not "server-default@None"


# -- the HTTP guard, against the loopback fault server ---------------------------------------


@pytest.fixture(scope="module")
def server():
    s = FaultServer(lifetime=300)
    yield s
    s.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_trickle_and_endless_bodies_end_at_the_deadline_or_the_cap(server, make_client, protocol):
    trickle = make_client(protocol, env=endpoint_env(protocol, server.url("trickle")), model=MODEL, timeout=0.8,
                          retries=0)
    with pytest.raises(LLMTimeout):
        trickle.structured("t", ASK, SCHEMA, max_tokens=8, use_cache=False)
    endless = make_client(protocol, env=endpoint_env(protocol, server.url("endless")), model=MODEL, timeout=30,
                          retries=0)
    with pytest.raises(LLMBadResponse, match="larger than"):
        endless.structured("t", ASK, SCHEMA, max_tokens=8, use_cache=False)


def _requests_to(server, fault):
    return [r for r in server.seen if r["path"].startswith(f"/{fault}/")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault, error", [("http500", LLMServerError), ("http429", LLMRateLimited)])
def test_5xx_and_429_are_retried_alike_on_every_backend(server, make_client, protocol, fault, error):
    before = len(_requests_to(server, fault))
    client = make_client(protocol, env=endpoint_env(protocol, server.url(fault)), model=MODEL, timeout=30,
                         retries=2)   # make_client does not really sleep between retries
    with pytest.raises(error):
        client.structured("t", ASK, SCHEMA, max_tokens=8, use_cache=False)
    assert len(_requests_to(server, fault)) - before == 3   # the first try and two retries


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_refused_connection_is_not_retried(closed_port, make_client, protocol, capsys):
    client = make_client(protocol, env=endpoint_env(protocol, f"http://127.0.0.1:{closed_port}"), model=MODEL,
                         timeout=30, retries=2)
    with pytest.raises(LLMUnavailable) as caught:
        client.structured("t", ASK, SCHEMA, max_tokens=8, use_cache=False)
    assert caught.value.retryable is False and "retry" not in capsys.readouterr().err


def test_budget_without_deadline_never_expires():
    b = Budget()
    assert b.remaining() is None and not b.expired()
    b.start(0.0)
    assert b.expired()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_proxy_transports_from_the_environment_are_guarded_too(monkeypatch, protocol):
    from kb_indexer.llm.guard import GuardedTransport
    from kb_indexer.llm.registry import make_backend

    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    backend = make_backend(resolve(LLMOptions(backend=protocol, model=MODEL)))
    try:
        http = backend._client._client if protocol == "ollama" else backend._http
        assert isinstance(http._transport, GuardedTransport)
        mounted = [t for t in http._mounts.values() if t is not None]
        assert mounted and all(isinstance(t, GuardedTransport) for t in mounted)
    finally:
        backend.close()


def test_query_llm_timeout_nan_is_usage_even_without_a_configured_backend(similar_kb, cli):
    res = cli("query", "games", "--context", "game AI", "--llm-timeout", "nan", "--db", similar_kb.db_path,
              "--format", "json")
    assert res.exit_code == 2
