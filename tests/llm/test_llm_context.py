"""Context-aware `similar`: one batched cached call per keyword, threshold, fallback, CLI behaviour."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from llm_helpers import Reply, openai_reply

from kb_indexer.llm.base import LLMUnavailable
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.search.context_match import (MAX_PER_CALL, SYSTEM_PROMPT, TASK, schema_for,
                                          score_contexts, similar_in_context)
from fake_llm import FakeBackend
from kb_indexer.llm.structured import LLMClient

ITEM_KEYS = ["keyword", "similarity_type", "context", "score", "context_match_score", "directional", "direction"]
TOP_KEYS = ["keyword", "user_context", "similar_keywords", "count", "llm", "cache"]
LINE = re.compile(r'^(\d+)\. "(.+?)" -> "(.+?)" \(type: (\w+)', re.M)
RATING_BY_TYPE = {"application": 92, "abbreviation": 80, "contrast": 10}  # percentages


def rate_by_type(prompt: str) -> dict[str, float]:
    return {n: RATING_BY_TYPE.get(t, 50) for n, _, _, t in LINE.findall(prompt)}


def fake_client(conn, *answers):
    fake = FakeBackend(list(answers))
    return LLMClient(resolve(LLMOptions(backend="fake")), conn=conn, backend=fake, sleep=lambda s: None), fake


def relations(kb, keyword):
    from kb_indexer.store.similarities import neighbours
    return neighbours(kb.conn, kb._keyword_row(keyword)["id"])


def test_one_batched_call_scores_every_relation(similar_kb):
    rels = relations(similar_kb, "reinforcement learning")
    assert len(rels) > 5
    prompt_probe, _ = fake_client(similar_kb.conn)
    from kb_indexer.search.context_match import build_messages
    user_prompt = build_messages("game AI", [{**r, "source": "reinforcement learning"} for r in rels],
                                 "reinforcement learning")[1].content
    client, fake = fake_client(similar_kb.conn, rate_by_type(user_prompt))
    out = similar_in_context(similar_kb.conn, "reinforcement learning", rels, "game AI", 0.7, client=client)
    assert len(fake.calls) == 1
    call = fake.calls[0]
    assert call["task"] == TASK and call["schema"] == schema_for(len(rels)) and call["temperature"] == 0.0
    prompt = call["messages"][1]["content"]
    for r in rels:  # every candidate with its type, stored context and score
        assert f'-> "{r["keyword"]}" (type: {r["similarity_type"]}; stored score {r["score"]:.2f})' in prompt
        assert r["context"] in prompt
    assert "User context: game AI" in prompt
    assert "contrast" in call["messages"][0]["content"] and "0 to 20" in SYSTEM_PROMPT
    assert list(out) == TOP_KEYS
    assert out["llm"] == {"backend": "fake", "model": "fake-model", "used": True, "fallback": None, "error": None,
                          "batches": {"total": 1, "llm": 1, "lexical": 0}}
    assert out["cache"] == {"hits": 0, "misses": 1}
    kept = out["similar_keywords"]
    assert kept and all(list(i) == ITEM_KEYS for i in kept) and out["count"] == len(kept)
    assert {i["similarity_type"] for i in kept} <= {"application", "abbreviation"}
    assert all(i["context_match_score"] >= 0.7 for i in kept)
    scores = [i["context_match_score"] for i in kept]
    assert scores == sorted(scores, reverse=True)
    assert {i["keyword"].lower() for i in kept} >= {"alphago", "rl"}
    assert {i["keyword"].lower(): i["context_match_score"] for i in kept}["alphago"] == 0.92  # a real number


def test_threshold_zero_keeps_everything_and_contrast_scores_low(similar_kb):
    rels = relations(similar_kb, "reinforcement learning")
    client, fake = fake_client(similar_kb.conn)
    fake.queue({str(i + 1): RATING_BY_TYPE.get(r["similarity_type"], 50) for i, r in enumerate(rels)})
    out = similar_in_context(similar_kb.conn, "reinforcement learning", rels, "game AI", 0.0, client=client)
    assert out["count"] == len(rels)
    for item in out["similar_keywords"]:
        assert 0.0 <= item["context_match_score"] <= 1.0
        if item["similarity_type"] == "contrast":
            assert item["context_match_score"] == 0.1


def test_large_sets_are_scored_in_bounded_batches(empty_kb):
    cands = [{"id": i, "keyword": f"k{i}", "similarity_type": "related_concept", "context": "c", "score": 0.5}
             for i in range(MAX_PER_CALL + 5)]
    client, fake = fake_client(empty_kb.conn, {str(i + 1): 70 for i in range(MAX_PER_CALL)}, {str(i + 1): 30 for i in range(5)})
    scores, info = score_contexts(empty_kb.conn, "anything", cands, client=client)
    assert len(fake.calls) == 2 and info["llm"]["used"]
    assert fake.calls[0]["schema"]["required"] == [str(i + 1) for i in range(MAX_PER_CALL)]
    assert all(c["schema"]["additionalProperties"] is False for c in fake.calls)
    assert [scores[i] for i in range(MAX_PER_CALL + 5)] == [0.7] * MAX_PER_CALL + [0.3] * 5


def test_llm_failure_falls_back_to_lexical(similar_kb):
    rels = relations(similar_kb, "reinforcement learning")
    client, fake = fake_client(similar_kb.conn, *[LLMUnavailable("refused")] * 3)
    out = similar_in_context(similar_kb.conn, "reinforcement learning", rels, "game playing agents", 0.5,
                             client=client)
    assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical" and "refused" in out["llm"]["error"]
    assert [i["keyword"].lower() for i in out["similar_keywords"]] == ["alphago"]  # "game-playing agents"
    assert similar_kb.conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0


def test_lexical_score():
    from kb_indexer.search.context import lexical_score

    cand = {"keyword": "AlphaGo", "context": "When discussing game-playing agents, AlphaGo ...",
            "similarity_type": "application"}
    assert lexical_score("game playing agents", cand) == 1.0
    assert lexical_score("robotics", cand) == 0.0
    assert lexical_score("game robotics", {**cand, "similarity_type": "contrast"}) == 0.25
    assert lexical_score("the of and", cand) == 1.0  # no content words: no information (the one rule)


def test_no_candidates_no_call(empty_kb):
    client, fake = fake_client(empty_kb.conn)
    scores, info = score_contexts(empty_kb.conn, "x", [], client=client)
    assert scores == {} and fake.calls == [] and info["llm"]["used"] is False


def test_backend_none_is_lexical_without_warning(similar_kb, cli):
    res = cli("similar", "reinforcement learning", "--user-context", "game playing", "--llm-backend", "none",
              "--db", similar_kb.db_path, "--format", "json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["llm"]["backend"] == "none" and data["llm"]["fallback"] == "lexical"
    assert "warning" not in res.stderr


def test_similar_without_context_is_unchanged(similar_kb, cli):
    res = cli("similar", "RL", "--db", similar_kb.db_path, "--format", "json")
    data = json.loads(res.stdout)
    assert list(data) == ["keyword", "similar_keywords", "count", "total"]
    assert "context_match_score" not in data["similar_keywords"][0]


@pytest.mark.parametrize("args", [["--context-threshold", "1.5"], ["--user-context", " "], ["--llm-backend", "nope"]])
def test_usage_errors(similar_kb, cli, args):
    base = ["similar", "RL", "--db", similar_kb.db_path, "--format", "json"]
    if "--user-context" not in args:
        base += ["--user-context", "games"]
    res = cli(*base, *args)
    assert res.exit_code == 2, (res.stdout, res.stderr)
    assert json.loads(res.stderr)["error"]["code"] == "usage" and res.stdout == ""


# -- across processes, over HTTP -------------------------------------------------------------


def openai_scorer(request) -> Reply:
    body = request.json
    return Reply(body=openai_reply(json.dumps(rate_by_type(body["messages"][-1]["content"]))))


@pytest.fixture
def openai_env(http_server, monkeypatch):
    http_server.route("/v1/chat/completions", openai_scorer)
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", http_server.url + "/v1")
    monkeypatch.setenv("KBINDEX_LLM_BACKEND", "openai")
    monkeypatch.setenv("KBINDEX_LLM_MODEL", "scripted")
    return http_server


def test_cache_hits_across_processes(similar_kb, run, openai_env):
    args = ["similar", "reinforcement learning", "--user-context", "game AI", "--db", similar_kb.db_path,
            "--format", "json"]
    first = run(*args)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""
    data = first.json()
    assert data["llm"]["used"] and data["cache"] == {"hits": 0, "misses": 1}
    assert len(openai_env.posts()) == 1
    sent = openai_env.posts()[0].json
    assert sent["model"] == "scripted" and sent["max_tokens"] <= 1024 and sent["temperature"] == 0

    second = run(*args)
    assert second.json()["cache"] == {"hits": 1, "misses": 0}
    assert second.json()["similar_keywords"] == data["similar_keywords"]
    assert len(openai_env.posts()) == 1  # served from the cache, no request

    run(*args, "--no-cache")
    assert len(openai_env.posts()) == 2

    stats = run("cache", "stats", "--db", similar_kb.db_path, "--format", "json").json()
    assert stats["entries"] == 1 and stats["hits"] == 1
    assert stats["by_task"][0]["task"] == TASK and stats["by_task"][0]["model"] == "scripted"
    table = run("cache", "stats", "--db", similar_kb.db_path)
    assert table.returncode == 0 and TASK in table.stdout
    cleared = run("cache", "clear", "--task", "other", "--db", similar_kb.db_path, "--format", "json").json()
    assert cleared["removed"] == 0
    cleared = run("cache", "clear", "--db", similar_kb.db_path, "--format", "json").json()
    assert cleared["removed"] == 1
    assert run("cache", "stats", "--db", similar_kb.db_path, "--format", "json").json()["entries"] == 0


def test_unreachable_llm_warns_on_stderr_only(similar_kb, run, closed_port):
    res = run("similar", "reinforcement learning", "--user-context", "game playing agents", "--context-threshold",
              "0.5", "--db", similar_kb.db_path, "--format", "json",
              env={"OLLAMA_HOST": f"127.0.0.1:{closed_port}", "KBINDEX_LLM_RETRIES": "0",
                   "KBINDEX_LLM_BACKEND": "ollama"})   # chosen: with none chosen, no server is asked
    assert res.returncode == 0
    data = json.loads(res.stdout)  # stdout is only the JSON result
    assert data["llm"] == {"backend": "ollama", "model": "llama3.2:3b", "used": False, "fallback": "lexical",
                           "error": data["llm"]["error"], "batches": {"total": 1, "llm": 0, "lexical": 1}}
    assert str(closed_port) in data["llm"]["error"]
    assert data["similar_keywords"][0]["keyword"].lower() == "alphago"
    assert "warning: LLM ollama" in res.stderr and "lexical fallback" in res.stderr
    assert "Traceback" not in res.stderr


def _interrupt_similar(similar_kb, http_server) -> subprocess.CompletedProcess:
    """Start `similar --user-context` against a server that never answers in time, then press Ctrl-C."""
    http_server.route("/v1/chat/completions", lambda req: Reply(body=openai_reply("{}"), delay=30))
    env = dict(os.environ, KBINDEX_OPENAI_BASE_URL=http_server.url + "/v1", KBINDEX_LLM_MODEL="m")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kb_indexer", "similar", "reinforcement learning",
                             "--user-context", "games", "--llm-backend", "openai", "--db", str(similar_kb.db_path),
                             "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not http_server.posts() and time.monotonic() - started < 30:
        time.sleep(0.05)
    assert http_server.posts(), "the command never reached the server"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_ctrl_c_cancels_cleanly(similar_kb, http_server):
    # The server answers after 30 s; _interrupt_similar's communicate(timeout=20) fails if the command waited.
    res = _interrupt_similar(similar_kb, http_server)
    assert res.stdout == "" and "Traceback" not in res.stderr
    assert len(http_server.posts()) == 1  # no retry, no fallback after Ctrl-C
    assert similar_kb.conn.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0


def test_ctrl_c_exits_130(similar_kb, http_server):
    res = _interrupt_similar(similar_kb, http_server)
    assert res.returncode == 130
    # under --format json the error is a JSON object an agent can read
    assert json.loads(res.stderr)["error"] == {"code": "interrupted", "message": "Interrupted (Ctrl-C)."}
