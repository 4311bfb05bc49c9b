"""`context compress` never returns more than the window: huge messages kept verbatim (the tail, the latest user
message, a system message) and huge skills are cut to their share; a history many times the window is summarised
within it; and ordinary conversations compress exactly as they did before."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from context_helpers import alternates, conversation, non_system_roles, skill
from kb_indexer.context import extractive
from kb_indexer.context.compress import CompressOptions, compress, total_tokens
from kb_indexer.context.fit import cut_text
from kb_indexer.tokens import estimate_tokens

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "context_compress_golden.json"
MARK = "[Summary of the earlier conversation"


def huge(start: str, end: str, chars: int = 300_000) -> str:
    filler = "line of a pasted log with a timestamp and a status code. "
    return start + " " + filler * (chars // len(filler)) + end


def with_huge_tail(turns: int = 30, window: int = 4096):
    msgs = conversation(turns)
    msgs[-2]["content"] = huge("The assistant's long answer starts here.", "And that is the whole answer.")
    msgs[-1]["content"] = huge("Here is my log:", "So why did the job fail?")
    return msgs, window


def test_huge_last_messages_are_cut_so_the_result_fits_the_window():
    msgs, window = with_huge_tail()
    out = compress(msgs, [], CompressOptions(window=window))
    st = out["stats"]
    assert st["tokens_after"] <= window and not st["over_window"]
    assert total_tokens(out["messages"], []) == st["tokens_after"]
    last, answer = out["messages"][-1], out["messages"][-2]
    assert st["cut_messages"] == [len(out["messages"]) - 2, len(out["messages"]) - 1]
    assert last["content"].startswith("Here is my log:") and last["content"].endswith("So why did the job fail?")
    assert answer["content"].startswith("The assistant's long answer") and "characters cut" in answer["content"]
    assert out["messages"][0] == msgs[0]                         # a short system message is kept whole
    assert out["messages"][1]["content"].startswith(MARK)        # the older history is still summarised
    assert alternates(non_system_roles(out["messages"]))
    assert st["stages"][-1]["stage"] == "cut_to_window"


def test_a_huge_system_message_and_a_huge_skill_are_cut_to_their_share_too():
    msgs = conversation(4, system=huge("You are the on-call assistant.", "Answer briefly."))
    steps = "\n".join(f"- step {i}: run check {i} and write down what it printed" for i in range(20_000))
    big = dict(skill("runbook", "active", 2), content=f"# Runbook\n\n{steps}\n- Escalate after an hour.")
    out = compress(msgs, [big, skill("small", "active", 1)], CompressOptions(window=2048))
    st = out["stats"]
    assert st["tokens_after"] <= 2048 and not st["over_window"]
    assert 0 in st["cut_messages"] and st["cut_skills"] == ["runbook"]
    assert out["messages"][0]["content"].endswith("Answer briefly.")
    assert out["messages"][-1] == msgs[-1]                       # what fits its share is kept whole


def test_a_history_ten_times_the_window_is_summarised_within_the_window():
    msgs = conversation(200)
    window = total_tokens(msgs, []) // 10
    out = compress(msgs, [], CompressOptions(window=window))
    st = out["stats"]
    assert st["tokens_after"] * 100 < 80 * window and st["cut_messages"] == []
    assert out["messages"][1]["content"].startswith(MARK) and "extractive" in out["messages"][1]["content"]


@pytest.mark.parametrize("limit", [0, 5, 20, 60, 400])
def test_a_cut_text_keeps_its_start_and_end_within_the_limit(limit):
    text = huge("Start here.", "The end.", 20_000)
    cut = cut_text(text, limit)
    assert estimate_tokens(cut) <= limit
    if limit >= 60:
        assert cut.startswith("Start") and cut.endswith("end.") and "characters cut" in cut
    assert cut_text("short", limit or 1) == ("short" if limit else "")
    korean = "강화 학습은 보상으로 배운다. " * 2000            # one token per Hangul character
    assert estimate_tokens(cut_text(korean, limit)) <= limit


def test_ordinary_conversations_compress_as_they_did_before():
    """The outputs below were recorded before the changes that keep a result within its window (at 82, 92
    and 97% of the window nothing of them applies)."""
    sys.path.insert(0, str(REPO))
    from bench.context_conv import generate
    for case in json.loads(GOLDEN.read_text()):
        conv = generate(case["seed"], case["turns"], case["family"])
        out = compress(conv["messages"], conv["skills"], CompressOptions(window=case["window"]))
        summary = next(m["content"] for m in out["messages"] if m["content"].startswith(MARK))
        assert (out["stats"]["level"], out["stats"]["tokens_after"]) == (case["level"], case["tokens_after"])
        assert summary == case["summary"]
        digest = hashlib.sha1(json.dumps([out["messages"], out["skills"]], sort_keys=True).encode()).hexdigest()
        assert digest == case["messages_sha1"] and out["stats"]["cut_messages"] == []


class CountingMemo(dict):
    """A memo of split and scored messages that counts how often a message is split and scored."""
    def __init__(self) -> None:
        super().__init__()
        self.misses = 0

    def get(self, key, default=None):
        found = super().get(key, default)
        self.misses += found is None
        return found


def test_several_summaries_of_a_long_history_split_and_score_each_message_once():
    msgs = [m for m in conversation(100) if m["role"] != "system"]
    memo = CountingMemo()
    first = extractive.summarise(msgs, 2000, memo=memo)
    again = extractive.summarise(msgs[:150], 1000, memo=memo)
    assert memo.misses == len(msgs)
    assert first == extractive.summarise(msgs, 2000) and again == extractive.summarise(msgs[:150], 1000)


def test_the_repeat_check_finds_a_repeat_among_many_chosen_sentences():
    taken = extractive.Taken()
    units = extractive.units_of([{"role": "user", "content": f"We chose model {i} for stage S{i} of project P{i}."}
                                 for i in range(500)])
    for u in units:
        taken.add(u)
    again = extractive.units_of([{"role": "user", "content": "We chose model 250 for stage S250 of project P250."}])
    other = extractive.units_of([{"role": "user", "content": "We chose model 250 for stage S250 of Quokka Delta."}])
    assert taken.repeats(again[0]) and not taken.repeats(other[0])
