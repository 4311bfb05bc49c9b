"""A misbehaving LLM server never breaks an LLM command: it falls back and says so (issue 8 item 9).

The fault server is bench/stress_llm.py's (loopback only). Every fault kind, on the Ollama, the
OpenAI-compatible and the Gemini protocol (issue 27 item 9), through the Python API for all three LLM
commands and embeddings, and through the installed ``kbindex`` for a subset. Asserted: exit code / no exception, valid JSON, the fallback
flagged with its error (the LLM used for the control case ``ok``). Nothing is timed beyond "it
finished" (the subprocess timeout is generous).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kb_indexer.api import QueryOptions

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.stress_llm import FAULTS, MODEL, PROTOCOLS, VECTOR, FaultServer, endpoint_env  # noqa: E402

from kb_indexer.api import KnowledgeBase  # noqa: E402
from kb_indexer.llm.base import LLMError  # noqa: E402
from kb_indexer.llm.config import EmbedOptions, LLMOptions, resolve_embed  # noqa: E402
from kb_indexer.llm.embedding import EmbedClient  # noqa: E402

TIMEOUT = 1.0
OK_TIMEOUT = 30.0  # the control case never waits; a long timeout keeps a loaded machine from failing it


@pytest.fixture(scope="module")
def server():
    s = FaultServer(lifetime=600)
    yield s
    s.close()


def _point(monkeypatch, server, protocol, fault):
    for name, value in endpoint_env(protocol, server.url(fault)).items():
        monkeypatch.setenv(name, value)
    return LLMOptions(backend=protocol, model=MODEL, timeout=OK_TIMEOUT if fault == "ok" else TIMEOUT, no_cache=True)


def _assert_flagged(llm, fault):
    if fault == "ok":
        assert llm["used"] is True and llm["fallback"] is None, llm
    else:
        assert llm["fallback"] == "lexical" and llm["error"], llm
        assert llm["batches"]["lexical"] >= 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", FAULTS)
def test_similar_and_query_fall_back_on_every_fault(similar_kb, server, monkeypatch, protocol, fault):
    opts = _point(monkeypatch, server, protocol, fault)
    out = similar_kb.similar("reinforcement learning", user_context="game playing agents",
                             context_threshold=0.5, llm=opts)
    json.dumps(out)
    _assert_flagged(out["llm"], fault)
    assert out["count"] >= 1   # the lexical fallback (or the LLM) still answers
    q = similar_kb.query("agents for board games", ["reinforcement learning"],
                         options=QueryOptions(context="game AI", record=False), llm=opts)
    json.dumps(q)
    _assert_flagged(q["llm"], fault)
    assert q["count"] > 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", FAULTS)
def test_doctor_reports_every_fault_as_a_problem(similar_kb, server, monkeypatch, protocol, fault):
    opts = _point(monkeypatch, server, protocol, fault)
    report = KnowledgeBase.doctor(similar_kb.db_path, opts)
    json.dumps(report)
    if fault == "ok":
        assert report["ok"] and report["llm"]["structured_output"] is True, report["problems"]
    else:
        assert report["ok"] is False and report["problems"] and report["llm"]["error"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", FAULTS)
def test_embeddings_fail_cleanly_on_every_fault(server, monkeypatch, protocol, fault):
    _point(monkeypatch, server, protocol, fault)
    opts = EmbedOptions(backend=protocol, model=MODEL, timeout=OK_TIMEOUT if fault == "ok" else TIMEOUT,
                        retries=0 if fault == "http429" else None)
    client = EmbedClient(resolve_embed(opts), sleep=lambda s: None)
    try:
        if fault in ("ok", "wrong_schema"):   # an embedding request has no schema: both answer vectors
            vectors = client.embed(["alpha", "beta"])
            assert vectors.shape == (2, len(VECTOR))
        else:
            with pytest.raises(LLMError):
                client.embed(["alpha", "beta"])
    finally:
        client.close()


CLI_CASES = [("ollama", "nonjson", "similar"), ("ollama", "envelope", "query"), ("ollama", "nonjson", "doctor"),
             ("ollama", "trickle", "similar"), ("openai", "endless", "query"), ("openai", "stall", "similar"),
             ("openai", "wrong_schema", "doctor"), ("ollama", "ok", "similar"), ("gemini", "trickle", "similar"),
             ("gemini", "endless", "query"), ("gemini", "stall", "doctor"), ("gemini", "ok", "similar"),
             # headers trickled a byte at a time (each within the read timeout): the whole request has the deadline
             ("openai", "slowheaders", "doctor"), ("gemini", "slowheaders", "similar"), ("ollama", "slowheaders", "query")]
COMMANDS = {
    "similar": ["similar", "reinforcement learning", "--user-context", "game playing agents"],
    "query": ["query", "agents for board games", "-k", "reinforcement learning", "--context", "game AI"],
    "doctor": ["doctor"],
}


@pytest.mark.parametrize("protocol,fault,command", CLI_CASES)
def test_installed_cli_falls_back_with_valid_json(similar_kb, server, run, protocol, fault, command):
    env = endpoint_env(protocol, server.url(fault))
    res = run(*COMMANDS[command], "--llm-backend", protocol, "--llm-model", MODEL, "--llm-timeout",
              str(OK_TIMEOUT if fault == "ok" else TIMEOUT),
              "--db", similar_kb.db_path, "--format", "json", env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    data = res.json()
    if command == "doctor":
        assert data["ok"] is False and data["problems"]
    else:
        _assert_flagged(data["llm"], fault)
        if fault != "ok":
            assert "not used" in res.stderr or "warning" in res.stderr
