"""`context compress` levels without an LLM: each threshold (80/90/95% of the window) triggers exactly, the
output is always a valid message list, and skills go by priority."""

from __future__ import annotations

import pytest

from context_helpers import alternates, conversation, non_system_roles, pad_to, skill
from kb_indexer.context.compress import CompressOptions, compress, skill_tokens, total_tokens
from kb_indexer.tokens import message_tokens

WINDOW = 2000
MARK = "[Summary of the earlier conversation"
STATS_FIELDS = {"tokens_before", "tokens_after", "ratio", "level", "stages", "llm_calls", "cache_hits", "fallback",
                "window", "usage_before", "usage_after", "dropped_skills", "over_window"}


def run(messages, skills=(), window=WINDOW, keep_last=4):
    return compress(messages, list(skills), CompressOptions(window=window, keep_last=keep_last))


def at_percent(pct_tokens: int, skills=()):
    """The conversation padded to exactly ``pct_tokens`` tokens, i.e. pct_tokens / WINDOW of the window."""
    return pad_to(conversation(), list(skills), pct_tokens)


# -- thresholds ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tokens,level", [
    (1580, 0),     # 79%
    (1599, 0),     # one token under 80%
    (1600, 80),    # exactly 80%
    (1799, 80),    # one token under 90%
    (1800, 90),    # exactly 90%
    (1899, 90),    # one token under 95%
    (1900, 95),    # exactly 95%
    (2400, 95),    # over the window
])
def test_each_threshold_triggers_exactly(tokens, level):
    messages = at_percent(tokens)
    assert total_tokens(messages, []) == tokens
    out = run(messages)
    stats = out["stats"]
    assert stats["tokens_before"] == tokens and stats["level"] == level
    if level == 0:
        assert stats["stages"] == [] and stats["tokens_after"] == tokens
    else:
        first = stats["stages"][0]
        assert first["stage"] == "history" and first["level"] == level
        assert first["ratio"] == {80: 0.5, 90: 0.3, 95: 0.15}[level]
        assert stats["tokens_after"] < tokens


def test_the_same_history_compresses_harder_at_each_level():
    summaries = {}
    for tokens, level in ((1600, 80), (1800, 90), (1900, 95)):
        stage = run(at_percent(tokens))["stats"]["stages"][0]
        assert stage["budget"] < stage["replaced_tokens"]
        summaries[level] = stage["budget"] / stage["replaced_tokens"]
    assert summaries[80] > summaries[90] > summaries[95]


@pytest.mark.parametrize("tokens", [400, 1580, 1599])      # 20%, 79%, one token under 80%
def test_below_80_percent_nothing_changes(tokens):
    skills = [skill("s", "relevant", 1)]
    base = conversation(2) if tokens < 1000 else conversation()
    messages = pad_to(base, skills, tokens)
    out = run(messages, skills)
    assert out["stats"]["level"] == 0 and out["stats"]["tokens_before"] == tokens
    assert out["messages"] == messages and out["skills"] == skills
    assert out["stats"]["tokens_after"] == tokens and out["stats"]["ratio"] == 1.0
    assert out["stats"]["stages"] == [] and out["stats"]["dropped_skills"] == []


def test_usage_with_skills_counts_toward_the_threshold():
    skills = [skill("a", "active", 3)]
    messages = pad_to(conversation(), skills, 1600)
    assert run(messages, skills)["stats"]["level"] == 80
    assert run(messages, [])["stats"]["level"] == 0    # the same messages alone are under 80%


# -- what the history stage keeps -------------------------------------------------------------------------

@pytest.mark.parametrize("tokens", [1600, 1800, 1900, 3000])
@pytest.mark.parametrize("keep_last", [0, 1, 2, 3, 4, 6])
def test_the_output_is_a_valid_list_that_keeps_what_must_be_kept(tokens, keep_last):
    messages = at_percent(tokens)
    out = run(messages, keep_last=keep_last)
    msgs, stats = out["messages"], out["stats"]
    assert STATS_FIELDS <= set(stats)
    # system message untouched and first; latest user message untouched and last
    assert msgs[0] == messages[0]
    assert [m for m in msgs if m["role"] == "system"] == [messages[0]]
    assert msgs[-1] == messages[-1]
    # the last keep_last messages verbatim
    if keep_last:
        assert msgs[-keep_last:] == messages[-keep_last:]
    # one summary, a user message, marked
    summaries = [m for m in msgs if m["content"].startswith(MARK)]
    assert len(summaries) == 1 and summaries[0]["role"] == "user" and msgs[1] is summaries[0]
    assert all(MARK not in m["content"] for m in msgs if m is not summaries[0])
    # the rest after the summary is the input's tail, verbatim
    tail = msgs[2:]
    assert tail == messages[len(messages) - len(tail):]
    # roles alternate as the input's did
    assert alternates(non_system_roles(messages)) and alternates(non_system_roles(msgs))
    assert stats["tokens_after"] < stats["tokens_before"]
    assert stats["ratio"] == round(stats["tokens_after"] / stats["tokens_before"], 4)


@pytest.mark.parametrize("tokens", [1600, 1800, 1900, 3000])
def test_a_summary_is_never_longer_than_what_it_replaced(tokens):
    out = run(at_percent(tokens))
    for stage in out["stats"]["stages"]:
        if stage["stage"] == "history" and "skipped" not in stage:
            assert stage["summary_tokens"] < stage["replaced_tokens"]
    summary = out["messages"][1]
    replaced = out["stats"]["stages"][-1]["replaced_tokens"]
    assert message_tokens(summary) < replaced


def test_at_95_percent_the_summary_is_at_most_15_percent_of_what_it_replaced():
    messages = pad_to(conversation(30), [], 3800)
    out = run(messages, window=4000)
    stage = out["stats"]["stages"][0]
    assert stage["level"] == 95 and stage["replaced_tokens"] > 2000
    assert stage["summary_tokens"] <= 0.15 * stage["replaced_tokens"]


def test_the_extractive_summary_keeps_the_planted_facts():
    out = run(at_percent(1600))
    summary = out["messages"][1]["content"]
    assert out["stats"]["stages"][0]["source"] == "extractive"
    for fact in ("Korean", "PPO over DQN", "0.73", "Alice Park", "Orion-7"):
        assert fact in summary


def test_a_tiny_older_history_is_not_replaced_by_a_longer_note():
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "word " * 200}, {"role": "user", "content": "more " * 200}]
    window = total_tokens(messages, []) * 100 // 85
    out = run(messages, window=window)
    assert out["stats"]["level"] == 80
    assert out["messages"] == messages
    assert out["stats"]["tokens_after"] == out["stats"]["tokens_before"]
    assert all("skipped" in s for s in out["stats"]["stages"] if s["stage"] == "history")


def test_the_last_assistant_question_is_kept_verbatim():
    messages = conversation(12)
    question = {"role": "assistant", "content": "Should I keep PPO or switch to SAC?"}
    messages[-2] = question
    messages.insert(-1, {"role": "user", "content": "Let me think about it. " * 10})
    window = total_tokens(messages, []) * 100 // 85
    for keep_last in (0, 1):
        out = run(messages, window=window, keep_last=keep_last)
        assert out["stats"]["level"] == 80
        assert out["messages"][-3:] == [question] + messages[-2:]


def test_system_messages_anywhere_in_the_older_history_survive_unchanged():
    messages = conversation(12)
    extra = {"role": "system", "content": "Tool policy: never run rm -rf."}
    messages.insert(5, extra)
    window = total_tokens(messages, []) * 100 // 85
    out = run(messages, window=window)
    assert [m for m in out["messages"] if m["role"] == "system"] == [messages[0], extra]


def test_a_tool_result_is_never_kept_without_the_call():
    messages = [{"role": "system", "content": "sys"}]
    for i in range(8):
        messages += [
            {"role": "user", "content": f"We decided to look up run {i}. What did run {i} score?"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"run {i} scored 0.{i}3 " + "detail " * 40},
            {"role": "assistant", "content": f"Run {i} scored 0.{i}3."},
        ]
    messages.append({"role": "user", "content": "Which run was best?"})
    window = total_tokens(messages, []) * 100 // 92
    for keep_last in range(0, 8):
        out = run(messages, window=window, keep_last=keep_last)
        msgs = out["messages"]
        assert out["stats"]["level"] == 90 and msgs[-1] == messages[-1]
        for i, m in enumerate(msgs):
            if m["role"] == "tool":
                j = i - 1
                while msgs[j]["role"] == "tool":
                    j -= 1
                call = msgs[j]
                assert call["role"] == "assistant" and m["tool_call_id"] in {c["id"] for c in call["tool_calls"]}, \
                    (keep_last, i)


def test_the_ladder_climbs_when_a_level_is_not_enough():
    # a long latest user message cannot be touched: the history stages run at 80, 90 and 95, and then once
    # more keeping nothing beyond the latest user message; what is left over is reported, never cut
    messages = conversation(2)
    messages[-1] = {"role": "user", "content": "Here is the whole log: " + "line " * 4000}
    window = total_tokens(messages, []) * 100 // 85
    assert message_tokens(messages[-1]) * 100 >= 80 * window     # alone over the target
    out = run(messages, window=window)
    stats = out["stats"]
    assert stats["level"] == 80
    levels = [s["level"] for s in stats["stages"] if s["stage"] == "history"]
    assert levels == [80, 90, 95, 95]
    assert out["messages"][-1] == messages[-1] and out["messages"][0] == messages[0]
    assert stats["over_window"] is (stats["tokens_after"] > window)
    assert stats["tokens_after"] < stats["tokens_before"]


def test_compression_stops_once_under_80_percent():
    skills = [skill("relevant-one", "relevant", 1)]
    messages = pad_to(conversation(), skills, 1850)
    out = run(messages, skills)
    stats = out["stats"]
    assert stats["level"] == 90
    assert [s["stage"] for s in stats["stages"]] == ["history"]   # the history alone was enough
    assert out["skills"] == skills and stats["dropped_skills"] == []
    assert stats["tokens_after"] * 100 < 80 * WINDOW


# -- skills ---------------------------------------------------------------------------------------------

def skills_case(pct: int, skills, messages=None):
    messages = messages or [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi there"},
                            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "do it"}]
    window = total_tokens(messages, skills) * 100 // pct      # usage just at or over pct
    return run(messages, skills, window=window), window


def test_at_90_percent_relevant_skills_go_last_given_first_and_active_ones_stay():
    skills = [skill("A", "active", 10), skill("R1", "relevant", 10), skill("R2", "relevant", 10)]
    out, window = skills_case(90, skills)
    assert out["stats"]["level"] == 90
    assert [s["name"] for s in out["skills"]] == ["A", "R1"]     # dropping R2 (the last given) was enough
    assert out["stats"]["dropped_skills"] == ["R2"]
    assert out["skills"][0] == skills[0] and out["skills"][1] == skills[1]


def test_at_90_percent_every_relevant_skill_goes_before_an_active_one_is_touched():
    skills = [skill("R1", "relevant", 4), skill("A", "active", 10), skill("B", "active", 30),
              skill("R2", "relevant", 4)]
    out, window = skills_case(91, skills)
    stats = out["stats"]
    assert stats["level"] == 90
    assert stats["dropped_skills"] == ["R2", "R1"]
    assert [s["name"] for s in out["skills"]] == ["A", "B"]
    assert all(s["priority"] == "active" for s in out["skills"])
    drop = [s for s in stats["stages"] if s["stage"] == "drop_relevant_skills"]
    compressed = [s for s in stats["stages"] if s["stage"] == "compress_skills"]
    assert drop and (not compressed or stats["stages"].index(drop[0]) < stats["stages"].index(compressed[0]))


def test_at_95_percent_only_active_skills_stay():
    skills = [skill("A", "active", 10), skill("R1", "relevant", 10), skill("R2", "relevant", 10)]
    out, window = skills_case(95, skills)
    assert out["stats"]["level"] == 95
    assert [s["name"] for s in out["skills"]] == ["A"]
    assert sorted(out["stats"]["dropped_skills"]) == ["R1", "R2"]


def test_at_95_percent_active_skills_content_is_compressed():
    skills = [skill("A", "active", 60), skill("B", "active", 20), skill("R1", "relevant", 3)]
    out, window = skills_case(96, skills, conversation(6))
    stats = out["stats"]
    assert stats["level"] == 95
    names = [s["name"] for s in out["skills"]]
    assert names == ["A", "B"]
    by_name = {s["name"]: s for s in out["skills"]}
    a = by_name["A"]
    assert a["compressed"] == "extractive" and skill_tokens(a) < skill_tokens(skills[0])
    original_lines = set(skills[0]["content"].splitlines())
    assert all(line in original_lines for line in a["content"].splitlines())   # cut, never rewritten
    assert "## Step 0" in a["content"]
    stages = [s["stage"] for s in stats["stages"]]
    assert stages.index("drop_relevant_skills") < stages.index("compress_skills")
    assert stats["tokens_after"] < stats["tokens_before"]


def test_skill_priority_defaults_to_active_through_the_api(empty_kb):
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi there"},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "do it"}]
    skills = [{"name": "A", "content": skill("A", "active", 10)["content"]},
              skill("R", "relevant", 10)]
    window = total_tokens(messages, [dict(s, priority=s.get("priority", "active")) for s in skills]) * 100 // 90
    out = empty_kb.context.compress({"messages": messages, "skills": skills}, window=window, use_llm=False)
    assert [s["name"] for s in out["skills"]] == ["A"] and out["stats"]["dropped_skills"] == ["R"]
    assert out["llm"] is None


def test_compress_a_session_through_the_api(empty_kb):
    msgs = conversation(10)
    empty_kb.context.add("conv", [m for m in msgs if m["role"] != "system"])
    window = total_tokens(msgs, []) * 100 // 85
    out = empty_kb.context.compress({"messages": [msgs[0]]}, session="conv", window=window, use_llm=False)
    assert out["stats"]["level"] == 80
    assert out["messages"][0] == msgs[0]
    assert out["messages"][1]["content"].startswith(MARK)
    assert out["messages"][-1]["content"] == msgs[-1]["content"]
    assert out["stats"]["window_source"] == "--window"


def test_a_result_that_differs_only_in_its_number_is_not_a_repeat():
    from kb_indexer.context.extractive import summarise
    msgs = [{"role": "assistant", "content": f"The PPO run with batch size {b} scored 0.{b}."} for b in (16, 32, 64, 80)]
    text, kept = summarise(msgs, 300)
    assert kept == 4 and all(f"0.{b}" in text for b in (16, 32, 64, 80))
    same = [{"role": "assistant", "content": "The PPO run with batch size 16 scored 0.73."}] * 3
    assert summarise(same, 300)[1] == 1


def test_a_message_longer_than_a_chunk_is_split_not_cut():
    from kb_indexer.context.compress import chunks
    from kb_indexer.tokens import message_tokens
    korean = "강화 학습은 보상으로 배운다. " * 400                 # one token per Hangul character
    groups = chunks([{"role": "user", "content": korean}, {"role": "assistant", "content": "ok"}], 300)
    pieces = [g[0]["content"] for g in groups[:-1]]
    assert len(groups) > 2 and all(message_tokens(g[0]) <= 300 for g in groups)
    assert "".join(pieces).replace(" ", "") == korean.replace(" ", "")   # nothing dropped


def test_a_run_of_user_only_messages_is_compressed():
    """An agent that records only the user's turns: no assistant message to start the tail at."""
    notes = [{"role": "system", "content": "Keep notes."}]
    notes += [{"role": "user", "content": f"Note {i}: we decided to ship build {1000 + i} on day {i}."}
              for i in range(40)]
    window = total_tokens(notes, []) * 100 // 150            # 150% of the window
    out = compress(notes, [], CompressOptions(window=window))
    stats = out["stats"]
    assert stats["tokens_after"] < window and not stats["over_window"]
    assert out["messages"][0] == notes[0] and out["messages"][-1] == notes[-1]
    assert out["messages"][1]["content"].startswith("[Summary of the earlier conversation")
    assert [s for s in stats["stages"] if s["stage"] == "history"][0]["replaced_messages"] >= 30


def test_a_long_run_of_user_messages_after_a_dialogue_keeps_the_dialogue_facts():
    msgs = [{"role": "system", "content": "Assistant."}]
    for i in range(6):
        msgs += [{"role": "user", "content": f"We chose option {i} with batch size {100 + i}."},
                 {"role": "assistant", "content": "Noted."}]
    msgs += [{"role": "user", "content": f"ping {i}, nothing important here at all"} for i in range(40)]
    window = total_tokens(msgs, []) * 100 // 97
    out = compress(msgs, [], CompressOptions(window=window))
    text = " ".join(m["content"] for m in out["messages"])
    assert out["stats"]["tokens_after"] * 100 < 80 * window
    assert all(f"batch size {100 + i}" in text for i in range(6))   # not "(11 earlier messages dropped)"
