"""`context compress` with an LLM (the scripted backend): the summary is the model's, cached per level and
target, and every failure (error, timeout, invalid or too long an answer) falls back to the extractive
summary with a valid message list and a reason."""

from __future__ import annotations

import json
import re

import pytest

from context_helpers import alternates, conversation, non_system_roles, pad_to, scripted_client, skill
from kb_indexer.context.compress import total_tokens
from kb_indexer.llm.base import LLMTimeout, LLMUnavailable
from tests.conftest import REPO

MARK = "[Summary of the earlier conversation"
SUMMARY = "The user prefers Korean. They chose PPO over DQN. The run scored 0.73. Alice Park owns deploys."


@pytest.fixture
def k(empty_kb):
    return empty_kb


def client_for(kb, *answers):
    return scripted_client(kb, *answers)


def history(total: int = 2000) -> list[dict]:
    """Ten turns of older history (about 830 tokens) and a long latest user message, ``total`` tokens in
    all, so that at 80-95% of the window the older history is one chunk for the LLM."""
    msgs = conversation(10)
    msgs[-1] = dict(msgs[-1], content=msgs[-1]["content"] + " Here is the log:")
    return pad_to(msgs, [], total, index=len(msgs) - 1)


def window_for(messages, pct, skills=()):
    return total_tokens(messages, list(skills)) * 100 // pct


def compress(kb, messages, pct, *answers, skills=(), keep_last=4):
    client, fake = client_for(kb, *answers)
    out = kb.context.compress({"messages": messages, "skills": list(skills)}, window=window_for(messages, pct, skills),
                              keep_last=keep_last, client=client)
    return out, fake


def prompt_of(call) -> str:
    return call["messages"][1]["content"]


def asked_tokens(prompt: str) -> int:
    """The token target a history prompt names ("... in at most N tokens ...")."""
    return int(re.search(r"in at most (\d+) tokens", prompt).group(1))


def assert_valid(out, messages):
    msgs = out["messages"]
    assert msgs[0] == messages[0] and msgs[-1] == messages[-1]
    assert msgs[-4:] == messages[-4:]
    assert msgs[1]["role"] == "user" and msgs[1]["content"].startswith(MARK)
    assert alternates(non_system_roles(msgs))
    assert out["stats"]["tokens_after"] < out["stats"]["tokens_before"]


# -- the LLM's summary ------------------------------------------------------------------------------------

def test_the_llm_summary_replaces_the_older_history(k):
    messages = history()
    out, fake = compress(k, messages, 85, {"summary": SUMMARY})
    stats = out["stats"]
    assert stats["level"] == 80 and len(fake.calls) == 1
    assert stats["stages"][0]["source"] == "llm"
    assert stats["llm_calls"] == 1 and stats["cache_hits"] == 0 and stats["fallback"] is None
    assert_valid(out, messages)
    assert out["messages"][1]["content"] == f"{MARK} (17 messages, llm; kbindex)]\n{SUMMARY}"
    assert out["llm"] == {"backend": "fake", "model": "fake-model", "used": True, "fallback": None, "error": None}
    assert fake.calls[0]["task"] == "context_compress_80"


def test_the_prompt_states_target_what_to_keep_and_what_to_drop(k):
    out, fake = compress(k, history(), 85, {"summary": SUMMARY})
    system, user = fake.calls[0]["messages"][0]["content"], prompt_of(fake.calls[0])
    for word in ("preferences", "decisions", "results", "Remove", "repetition"):
        assert word in system
    stage = out["stats"]["stages"][0]
    assert "Compression level: moderate" in user and "about 50%" in user
    assert 0 < asked_tokens(user) <= stage["budget"]
    assert "I prefer answers in Korean." in user and "step 8" in user
    assert "So what should we do next" not in user                        # the latest user message is not sent


def test_levels_are_cached_apart(k):
    messages = history()
    out80, fake80 = compress(k, messages, 85, {"summary": "Eighty: " + SUMMARY})
    out90, fake90 = compress(k, messages, 92, {"summary": "Ninety: " + SUMMARY})
    assert out80["stats"]["level"] == 80 and out90["stats"]["level"] == 90
    assert len(fake80.calls) == 1 and len(fake90.calls) == 1       # 90% never got the 80% answer
    p80, p90 = prompt_of(fake80.calls[0]), prompt_of(fake90.calls[0])
    assert p80 != p90
    assert "moderate" in p80 and "about 50%" in p80
    assert "aggressive" in p90 and "about 30%" in p90
    assert asked_tokens(p90) < asked_tokens(p80)
    assert asked_tokens(p80) <= out80["stats"]["stages"][0]["budget"]
    assert asked_tokens(p90) <= out90["stats"]["stages"][0]["budget"]
    assert out90["stats"]["cache_hits"] == 0 and out90["stats"]["llm_calls"] == 1
    assert out80["messages"][1]["content"].endswith("Eighty: " + SUMMARY)
    assert out90["messages"][1]["content"].endswith("Ninety: " + SUMMARY)


def test_a_repeated_run_is_served_from_the_cache(k):
    messages = history(3000)
    for pct in (85, 96):
        first, fake1 = compress(k, messages, pct, *[{"summary": SUMMARY}] * 10)
        calls = first["stats"]["llm_calls"]
        assert calls >= 1 and calls == len(fake1.calls) and first["stats"]["cache_hits"] == 0
        again, fake2 = compress(k, messages, pct)                  # nothing queued: a call would fail
        assert fake2.calls == []
        assert again["stats"]["cache_hits"] == calls and again["stats"]["llm_calls"] == 0
        assert again["stats"]["fallback"] is None
        assert again["messages"] == first["messages"]


def test_a_long_history_is_sent_in_chunks_each_counted(k):
    messages = conversation(40)
    out, fake = compress(k, messages, 85, *[{"summary": f"Part {i}: PPO over DQN."} for i in range(10)])
    stats = out["stats"]
    assert len(fake.calls) >= 2 and stats["llm_calls"] == len(fake.calls)
    assert stats["stages"][0]["source"] == "llm"
    for i in range(len(fake.calls)):
        assert f"Part {i}: PPO over DQN." in out["messages"][1]["content"]


def test_skills_content_is_compressed_by_the_llm_at_95_percent(k):
    messages = conversation(2)
    skills = [skill("big", "active", 40), skill("other", "relevant", 2)]
    window = window_for(messages, 97, skills)
    client, fake = client_for(k, *[{"summary": "## Step 0\nRun the command number 0 and log the output."}] * 5)
    out = k.context.compress({"messages": messages, "skills": skills}, window=window, client=client)
    stats = out["stats"]
    assert stats["level"] == 95
    assert [s["name"] for s in out["skills"]] == ["big"]
    assert out["skills"][0]["compressed"] == "llm"
    assert out["skills"][0]["content"] == "## Step 0\nRun the command number 0 and log the output."
    assert "context_compress_skill" in [c["task"] for c in fake.calls]
    skill_prompt = next(prompt_of(c) for c in fake.calls if c["task"] == "context_compress_skill")
    assert "Compression level: maximum" in skill_prompt and "'big'" in skill_prompt


# -- fallbacks --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("answers,reason", [
    ((LLMUnavailable("connection refused"),), "connection refused"),
    ((LLMTimeout("no answer within 5s"),), "no answer within 5s"),
    (("this is not json", "still not json"), "invalid JSON"),
    (({"summary": "word " * 3000}, {"summary": "word " * 3000}), "not shorter than what it replaces"),
    (({"summary": "word " * 500}, {"summary": "word " * 500}), "the target is at most"),
    (({"wrong": "shape"}, {"wrong": "shape"}), "invalid answer after one repair attempt"),
])
def test_a_failing_llm_falls_back_to_the_extractive_summary(k, answers, reason):
    messages = history()
    out, fake = compress(k, messages, 92, *answers)
    stats = out["stats"]
    assert stats["level"] == 90
    assert_valid(out, messages)
    assert stats["stages"][0]["source"] == "extractive"
    assert stats["fallback"] and reason in stats["fallback"] and "LLM fake failed" in stats["fallback"]
    assert stats["llm_calls"] == 1 and stats["llm_failures"] == 1     # the request was sent, and failed
    assert out["llm"]["fallback"] == "extractive" and reason in out["llm"]["error"]
    assert len(fake.calls) == len(answers)                   # one repair attempt for a bad answer, no more
    assert "Korean" in out["messages"][1]["content"]         # the facts survive the fallback
    summary = out["messages"][1]
    assert summary["content"].startswith(f"{MARK} (17 messages, extractive; kbindex)]")


def test_the_repair_attempt_shows_the_model_its_error(k):
    out, fake = compress(k, history(), 92, "not json", {"summary": SUMMARY})
    assert len(fake.calls) == 2 and out["stats"]["stages"][0]["source"] == "llm"
    assert out["stats"]["fallback"] is None
    repair = fake.calls[1]["messages"]
    assert repair[-2]["role"] == "assistant" and repair[-2]["content"] == "not json"
    assert "not acceptable" in repair[-1]["content"]


def test_a_failed_server_is_not_asked_again_for_the_later_chunks(k):
    messages = conversation(40)
    out, fake = compress(k, messages, 85, LLMTimeout("slow"), *[{"summary": "never used"}] * 5)
    assert len(fake.calls) == 1
    assert out["stats"]["stages"][0]["source"] == "extractive"
    assert "never used" not in json.dumps(out["messages"])
    assert out["messages"][-1] == messages[-1]


def test_a_level_below_80_percent_never_calls_the_llm(k):
    messages = history()
    out, fake = compress(k, messages, 79)
    assert out["stats"]["level"] == 0 and fake.calls == [] and out["messages"] == messages
    assert out["llm"]["used"] is False


# -- through the command line ----------------------------------------------------------------------------

def test_cli_warns_on_stderr_and_prints_valid_json(run, k, tmp_path):
    messages = history()
    payload = tmp_path / "in.json"
    payload.write_text(json.dumps({"messages": messages, "skills": []}), encoding="utf-8")
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"error": "timeout", "message": "the fake model is asleep"}]), encoding="utf-8")
    env = {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script), "KBINDEX_LLM_RETRIES": "0"}
    res = run("context", "compress", "--input", payload, "--window", window_for(messages, 92),
              "--llm-backend", "fake", "--db", k.db_path, env=env)
    assert res.returncode == 0, res.stderr
    out = res.json()
    assert out["stats"]["level"] == 90 and out["stats"]["stages"][0]["source"] == "extractive"
    assert "the fake model is asleep" in out["stats"]["fallback"]
    assert out["messages"][-1] == messages[-1] and out["messages"][1]["content"].startswith(MARK)
    assert "warning" in res.stderr and "the fake model is asleep" in res.stderr
    calls = (tmp_path / "answers.json.calls.jsonl").read_text().splitlines()
    assert len(calls) == 1


def test_cli_with_a_working_fake_uses_the_llm_and_the_cache(cli, k, tmp_path, monkeypatch):
    messages = history()
    payload = tmp_path / "in.json"
    payload.write_text(json.dumps(messages), encoding="utf-8")       # a bare list is accepted
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"json": {"summary": SUMMARY}}]), encoding="utf-8")
    monkeypatch.setenv("KBINDEX_FAKE_LLM", str(script))
    args = ("context", "compress", "-i", payload, "-w", window_for(messages, 85), "--llm-backend", "fake",
            "--db", k.db_path)
    res = cli(*args)
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["stats"]["llm_calls"] == 1 and out["stats"]["stages"][0]["source"] == "llm"
    assert "warning" not in res.stderr
    again = json.loads(cli(*args).stdout)                             # the script is empty now
    assert again["stats"]["cache_hits"] == 1 and again["stats"]["llm_calls"] == 0
    assert again["messages"] == out["messages"]
    res = cli(*args, "--no-cache")
    assert res.exit_code == 0
    assert "warning" in res.stderr and json.loads(res.stdout)["stats"]["stages"][0]["source"] == "extractive"


def test_an_invalid_answer_costs_only_its_chunk(k):
    """A too-long or malformed answer is the model's, not an outage: the next chunk is still asked."""
    messages = conversation(40)
    out, fake = compress(k, messages, 85, "not json", "still not json",
                         *[{"summary": f"Part {i}: PPO over DQN."} for i in range(10)])
    assert len(fake.calls) >= 3                         # the failed chunk (and its repair), then the next
    assert out["stats"]["stages"][0]["source"] == "llm"
    assert "Part 0: PPO over DQN." in out["messages"][1]["content"]
    assert out["stats"]["fallback"] and "failed" in out["stats"]["fallback"]


def test_a_model_that_keeps_answering_badly_is_given_up_after_three_chunks(k):
    """60 chunks against a model whose every answer is invalid took 53 calls, each up to the timeout: after
    BAD_ANSWERS_MAX invalid answers in a row the rest get the extractive summary, said once."""
    from kb_indexer.context.compress import BAD_ANSWERS_MAX

    messages = conversation(120)
    out, fake = compress(k, messages, 85, *["not json"] * 200)
    assert len(fake.calls) == 2 * BAD_ANSWERS_MAX            # each chunk: its answer and one repair
    assert out["stats"]["stages"][0]["source"] == "extractive"
    assert out["stats"]["fallback"].count("failed") == 1      # said once, not once per chunk
    assert f"given up after {BAD_ANSWERS_MAX} invalid answers in a row" in out["stats"]["fallback"]
    assert out["messages"][-1] == messages[-1]
