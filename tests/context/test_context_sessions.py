"""Conversation sessions (`context add|build|show|reset|sessions`): messages recorded with timestamps and a
question flag, the context block (summary, recent user messages, last assistant question, normalised
message), its caps, the rolling summary, and two processes adding to one session at once."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from context_helpers import scripted_client
from kb_indexer.context.assemble import SUMMARY_CHARS
from kb_indexer.errors import NotFoundError, UsageError, ValidationError
from kb_indexer.llm.base import LLMTimeout
from tests.conftest import REPO

BUILD_KEYS = {"summary", "recent_user_messages", "last_assistant_question", "message", "prompt", "stats"}


@pytest.fixture
def k(empty_kb):
    return empty_kb


def client_for(kb, *answers):
    return scripted_client(kb, *answers)


def turns(n: int, start: int = 0) -> list[dict]:
    """``n`` user/assistant pairs with one fact per user message."""
    out = []
    for i in range(start, start + n):
        out.append({"role": "user", "content": f"We decided to use batch size {i * 16} for experiment E{i}."})
        out.append({"role": "assistant", "content": f"Noted for E{i}."})
    return out


# -- add -------------------------------------------------------------------------------------------------

def test_add_one_message_records_seq_timestamp_and_normalised_form(k):
    out = k.context.add("s1", role="user", text="how about workspace workspace 5")
    assert out == {"session": "s1", "messages": 1,
                   "added": [{"seq": 1, "role": "user", "is_question": False, "normalised": "workspace 5"}]}
    shown = k.context.show("s1")
    assert shown["count"] == 1
    msg = shown["messages"][0]
    assert msg["content"] == "how about workspace workspace 5" and msg["normalised"] == "workspace 5"
    assert msg["created_at"].startswith(shown["created_at"][:10]) and msg["created_at"].endswith("Z")


def test_add_a_list_in_one_call_gives_consecutive_seqs(k):
    k.context.add("s1", role="user", text="first")
    out = k.context.add("s1", [{"role": "assistant", "content": "Which one?"},
                               {"role": "user", "content": "the second one please"},
                               {"role": "assistant", "content": "Done."}])
    assert [a["seq"] for a in out["added"]] == [2, 3, 4] and out["messages"] == 4
    assert [a["normalised"] for a in out["added"]] == [None, "the second one", None]
    assert [m["role"] for m in k.context.show("s1")["messages"]] == ["user", "assistant", "user", "assistant"]


def test_a_bad_list_is_refused_whole(k):
    k.context.add("s1", role="user", text="first")
    with pytest.raises(ValidationError):
        k.context.add("s1", [{"role": "user", "content": "ok"}, {"role": "system", "content": "no"}])
    with pytest.raises(ValidationError):
        k.context.add("s1", [{"role": "user", "content": "ok"}, {"role": "user", "content": 5}])
    with pytest.raises(ValidationError):
        k.context.add("s1", [])
    with pytest.raises(UsageError):
        k.context.add("s1", role="bot", text="hi")
    with pytest.raises(UsageError):
        k.context.add("  ", role="user", text="hi")
    assert k.context.show("s1")["count"] == 1


@pytest.mark.parametrize("text,asked", [
    ("Do you want to open Workspace 5?", True),
    ('He said "really?"', True),
    ("**Ready?**", True),
    ("(open it now?)", True),
    ("워크스페이스 5를 열까요？", True),
    ("Is it fixed? Yes, it is.", False),
    ("Opened workspace 5.", False),
    ("What? No.", False),
])
def test_an_assistant_message_is_a_question_when_it_ends_with_one(k, text, asked):
    out = k.context.add("q", role="assistant", text=text)
    assert out["added"][0]["is_question"] is asked


def test_an_assistant_message_can_be_flagged_a_question(k):
    assert k.context.add("q", role="assistant", text="Pick one of A or B.", is_question=True)["added"][0]["is_question"]
    out = k.context.add("q", [{"role": "assistant", "content": "Tell me the name.", "is_question": True},
                              {"role": "assistant", "content": "Done.", "is_question": False}])
    assert [a["is_question"] for a in out["added"]] == [True, False]


def test_a_user_message_is_never_a_question(k):
    out = k.context.add("q", [{"role": "user", "content": "what can you do?"},
                              {"role": "user", "content": "open it", "is_question": True}])
    assert [a["is_question"] for a in out["added"]] == [False, False]
    with pytest.raises(UsageError, match=r"is_question \(--question\) flags an assistant message"):
        k.context.add("q", role="user", text="really?", is_question=True)       # --question on a user message
    assert not any(m["is_question"] for m in k.context.show("q")["messages"])


def test_add_through_the_cli_one_message_and_a_list(cli, k, tmp_path):
    db = k.db_path
    res = cli("context", "add", "--session", "c", "--role", "assistant", "Which workspace?", "--db", db,
              "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["added"] == [{"seq": 1, "role": "assistant", "is_question": True,
                                                "normalised": None}]
    res = cli("context", "add", "-s", "c", "--role", "assistant", "Pick one.", "--question", "--db", db,
              "-f", "json")
    assert json.loads(res.stdout)["added"][0]["is_question"] is True
    path = tmp_path / "msgs.json"
    path.write_text(json.dumps([{"role": "user", "content": "workspace workspace 5"},
                                {"role": "assistant", "content": "Opened."}]), encoding="utf-8")
    res = cli("context", "add", "-s", "c", "--input", path, "--db", db, "-f", "json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert [a["seq"] for a in out["added"]] == [3, 4] and out["added"][0]["normalised"] == "workspace 5"
    # the {"messages": [...]} shape is accepted too
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "thanks"}]}), encoding="utf-8")
    res = cli("context", "add", "-s", "c", "-i", path, "--db", db, "-f", "json")
    assert json.loads(res.stdout)["messages"] == 5
    assert k.context.show("c")["count"] == 5


# -- build -----------------------------------------------------------------------------------------------

def test_build_returns_the_designs_shape(k):
    k.context.add("b", [{"role": "user", "content": "open workspace Research"},
                        {"role": "assistant", "content": "Opened Research."},
                        {"role": "user", "content": "how about workspace workspace 5"},
                        {"role": "assistant", "content": "Do you want to open Workspace 5?"}])
    out = k.context.build("b", "yes please", use_llm=False)
    assert BUILD_KEYS <= set(out)
    assert out["summary"] is None
    assert out["recent_user_messages"] == ["open workspace Research", "how about workspace workspace 5"]
    assert out["last_assistant_question"] == "Do you want to open Workspace 5?"
    assert out["message"] == {"original": "yes please", "normalised": "yes"}
    assert out["prompt"] == (
        "Context:\n"
        "- Summary:\n"
        "- Recent user messages:\n"
        "  1) open workspace Research\n"
        "  2) how about workspace workspace 5\n"
        "- Last assistant question: Do you want to open Workspace 5?\n"
        "\n"
        "Current user message: yes")
    stats = out["stats"]
    assert stats["session_messages"] == 4 and stats["recent_used"] == 2 and stats["recent_limit"] == 8
    assert stats["prompt_chars"] == len(out["prompt"]) and stats["prompt_tokens_estimate"] > 0
    assert stats["current_recorded"] is False and out["recorded"] is None


def test_the_last_question_is_shown_only_when_the_last_assistant_message_asked(k):
    k.context.add("b", [{"role": "user", "content": "open it"},
                        {"role": "assistant", "content": "Which workspace?"},
                        {"role": "user", "content": "5"},
                        {"role": "assistant", "content": "Opened workspace 5."}])
    out = k.context.build("b", "now close it", use_llm=False)
    assert out["last_assistant_question"] is None
    assert "Last assistant question" not in out["prompt"]
    k.context.add("b", role="assistant", text="Anything else?")
    assert k.context.build("b", "no", use_llm=False)["last_assistant_question"] == "Anything else?"
    k.context.add("b", role="assistant", text="Ok, pick one.", is_question=True)   # flagged
    assert k.context.build("b", "the first", use_llm=False)["last_assistant_question"] == "Ok, pick one."


def test_the_recent_window_is_the_last_n_user_messages_oldest_first(k):
    k.context.add("w", turns(10))
    out = k.context.build("w", "next", recent=3, use_llm=False)
    assert out["recent_user_messages"] == [f"We decided to use batch size {i * 16} for experiment E{i}."
                                           for i in (7, 8, 9)]
    assert out["stats"]["recent_used"] == 3 and out["stats"]["recent_limit"] == 3
    assert len(k.context.build("w", "next", use_llm=False, summary_after=100)["recent_user_messages"]) == 8
    assert k.context.build("w", "next", recent=0, use_llm=False, summary_after=100)["recent_user_messages"] == []


def test_the_recent_window_through_the_cli(cli, k):
    k.context.add("w", turns(5))
    res = cli("context", "build", "-s", "w", "next", "--recent", "2", "--db", k.db_path, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["recent_user_messages"] == [
        "We decided to use batch size 48 for experiment E3.", "We decided to use batch size 64 for experiment E4."]


def test_a_just_recorded_current_message_is_not_repeated(k):
    k.context.add("r", [{"role": "user", "content": "open workspace Research"},
                        {"role": "assistant", "content": "Which one?"},
                        {"role": "user", "content": "how about workspace workspace 5"}])
    out = k.context.build("r", "how about workspace workspace 5", use_llm=False)
    assert out["recent_user_messages"] == ["open workspace Research"]
    assert out["stats"]["current_recorded"] is True
    assert out["prompt"].count("workspace workspace 5") == 0
    assert out["prompt"].endswith("Current user message: workspace 5")
    assert out["last_assistant_question"] == "Which one?"


def test_record_adds_the_message_after_building(k):
    k.context.add("r", role="user", text="open workspace Research")
    out = k.context.build("r", "how about workspace workspace 5", record=True, use_llm=False)
    assert out["recent_user_messages"] == ["open workspace Research"]
    assert out["recorded"] == {"seq": 2, "role": "user", "is_question": False, "normalised": "workspace 5"}
    shown = k.context.show("r")
    assert [m["content"] for m in shown["messages"]] == ["open workspace Research", "how about workspace workspace 5"]
    nxt = k.context.build("r", "open it", use_llm=False)
    assert nxt["recent_user_messages"] == ["open workspace Research", "how about workspace workspace 5"]


def test_record_through_the_cli(cli, k):
    res = cli("context", "build", "-s", "new", "open workspace 5", "--record", "--db", k.db_path, "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["recorded"]["seq"] == 1
    assert k.context.show("new")["messages"][0]["content"] == "open workspace 5"


def test_max_chars_drops_the_oldest_recent_messages_first(k):
    msgs = [{"role": "user", "content": f"message number {i} " + "x" * 80} for i in range(8)]
    k.context.add("cap", msgs)
    full = k.context.build("cap", "current", use_llm=False)
    assert len(full["recent_user_messages"]) == 8
    limit = len(full["prompt"]) - 150        # about two messages too long
    out = k.context.build("cap", "current", max_chars=limit, use_llm=False)
    kept = out["recent_user_messages"]
    assert 0 < len(kept) < 8
    assert kept == [m["content"] for m in msgs[8 - len(kept):]]      # the newest ones, in order
    assert out["stats"]["dropped_recent"] == 8 - len(kept)
    assert len(out["prompt"]) <= limit
    assert len(k.context.build("cap", "current", max_chars=limit + 95, use_llm=False)["recent_user_messages"]) \
        == len(kept) + 1


def test_the_current_message_is_cut_only_after_everything_else(k):
    k.context.add("cap", [{"role": "user", "content": "older " * 50}])
    current = "please open the workspace called " + " ".join(f"Research{i}" for i in range(60))
    out = k.context.build("cap", current, max_chars=200, use_llm=False)
    assert out["recent_user_messages"] == [] and out["stats"]["dropped_recent"] == 1
    assert out["message"]["normalised"] == current.removeprefix("please ").strip()
    assert "Current user message: open the workspace" in out["prompt"] and out["prompt"].endswith("Research59")
    assert len(out["prompt"]) <= 200 and out["stats"]["message_cut"]


def test_max_chars_through_the_cli_is_checked(cli, k):
    res = cli("context", "build", "-s", "x", "hi", "--max-chars", "10", "--db", k.db_path, "-f", "json")
    assert res.exit_code == 2 and json.loads(res.stderr)["error"]["code"] == "usage"


def test_an_unknown_session_is_an_empty_context_and_is_not_created(k):
    out = k.context.build("never-seen", "how about workspace workspace 5", use_llm=False)
    assert out["summary"] is None and out["recent_user_messages"] == [] and out["last_assistant_question"] is None
    assert out["prompt"] == "Context:\n- Summary:\n- Recent user messages:\n\nCurrent user message: workspace 5"
    assert out["stats"]["session_messages"] == 0
    assert k.context.sessions() == {"sessions": [], "count": 0}
    with pytest.raises(NotFoundError):
        k.context.show("never-seen")


# -- rolling summary -------------------------------------------------------------------------------------

def test_no_summary_until_the_session_exceeds_the_threshold(k):
    k.context.add("sum", turns(6))                        # 12 messages: not more than 12
    out = k.context.build("sum", "next", recent=2, use_llm=False)
    assert out["summary"] is None and out["stats"]["summary_refresh"] == {"refreshed": False}
    k.context.add("sum", role="user", text="Remember that Alice owns experiment E0.")   # 13
    out = k.context.build("sum", "next", recent=2, use_llm=False)
    refresh = out["stats"]["summary_refresh"]
    assert refresh["refreshed"] is True and refresh["source"] == "extractive"
    assert out["summary"]["source"] == "extractive"
    # everything older than the window (the last 2 user messages) is covered
    window_first_seq = 11                                 # user messages are seqs 1,3,..,11,13
    assert out["summary"]["covers_through"] == window_first_seq - 1
    assert refresh["folded_messages"] == window_first_seq - 1
    assert "batch size 0" in out["summary"]["text"]
    assert out["prompt"].startswith("Context:\n- Summary: ")
    assert "batch size 0" in out["prompt"].split("- Recent user messages:")[0]


def test_the_threshold_is_configurable(k):
    k.context.add("sum", turns(3))
    assert k.context.build("sum", "next", recent=1, summary_after=6, use_llm=False)["summary"] is None
    assert k.context.build("sum", "next", recent=1, summary_after=5, use_llm=False)["summary"] is not None


def test_the_summary_is_refreshed_incrementally(k):
    k.context.add("inc", turns(10))
    first = k.context.build("inc", "next", use_llm=False)            # 20 messages, window = last 8 users
    assert first["summary"]["covers_through"] == 4
    assert first["stats"]["summary_refresh"]["folded_messages"] == 4
    again = k.context.build("inc", "next", use_llm=False)
    assert again["stats"]["summary_refresh"] == {"refreshed": False}
    assert again["summary"]["text"] == first["summary"]["text"]
    k.context.add("inc", turns(2, start=10))
    nxt = k.context.build("inc", "next", use_llm=False)
    assert nxt["stats"]["summary_refresh"]["folded_messages"] == 4    # only what aged out since
    assert nxt["summary"]["covers_through"] == 8
    assert k.context.show("inc")["summary"]["covers_through"] == 8


def test_the_summary_is_capped(k):
    long_facts = [{"role": "user", "content": f"I prefer the staging cluster Orion-{i} for run R{i} because "
                                             f"the latency was {i}.{i}5 ms and we decided so on day {i}."}
                  for i in range(60)]
    k.context.add("cap", long_facts)
    out = k.context.build("cap", "next", use_llm=False)
    assert out["summary"] is not None and 0 < len(out["summary"]["text"]) <= SUMMARY_CHARS == 600


def test_an_llm_summary_is_used_and_capped(k):
    answer = "The user decided batch sizes for E0 and E1. " + "More. " * 96
    assert len(answer) > 600
    client, fake = client_for(k, {"summary": answer})
    k.context.add("llm", turns(10))
    out = k.context.build("llm", "next", recent=1, client=client)
    assert len(fake.calls) == 1
    assert out["summary"]["source"] == "llm" and out["stats"]["summary_refresh"]["source"] == "llm"
    assert out["stats"]["summary_refresh"]["fallback"] is None
    assert len(out["summary"]["text"]) <= 600 and out["summary"]["text"].startswith("The user decided")
    prompt = fake.calls[0]["messages"][-1]["content"]
    assert "batch size 0 for experiment E0" in prompt and "batch size 16 for experiment E1" in prompt
    assert "E9" not in prompt                              # only the aged-out messages are sent


def test_the_next_llm_summary_folds_in_the_previous_one(k):
    client, fake = client_for(k, {"summary": "Earlier: E0 and E1 batch sizes chosen."},
                              {"summary": "E0 to E3 batch sizes chosen."})
    k.context.add("llm", turns(10))
    k.context.build("llm", "next", client=client)
    k.context.add("llm", turns(2, start=10))
    out = k.context.build("llm", "next", client=client)
    assert len(fake.calls) == 2
    prompt = fake.calls[1]["messages"][-1]["content"]
    assert "Earlier: E0 and E1 batch sizes chosen." in prompt
    assert "experiment E2" in prompt and "experiment E0." not in prompt
    assert out["summary"]["text"] == "E0 to E3 batch sizes chosen."


def test_a_failing_llm_falls_back_to_the_extractive_summary(k):
    client, fake = client_for(k, LLMTimeout("the model took too long"))
    k.context.add("fail", turns(10))
    out = k.context.build("fail", "next", client=client)
    refresh = out["stats"]["summary_refresh"]
    assert refresh["source"] == "extractive" and "the model took too long" in refresh["fallback"]
    assert out["summary"]["source"] == "extractive" and "batch size 0" in out["summary"]["text"]


def test_no_backend_configured_is_the_extractive_summary(k):
    k.context.add("nb", turns(10))
    out = k.context.build("nb", "next")
    assert out["summary"]["source"] == "extractive"
    assert "no LLM backend configured" in out["stats"]["summary_refresh"]["fallback"]


# -- show / reset / sessions -----------------------------------------------------------------------------

def test_show_reset_and_sessions(k):
    k.context.add("a", turns(1))
    k.context.add("b", turns(10))
    k.context.build("b", "next", use_llm=False)
    listed = k.context.sessions()
    assert listed["count"] == 2
    rows = {s["session"]: s for s in listed["sessions"]}
    assert rows["a"]["messages"] == 2 and rows["a"]["user_messages"] == 1 and rows["a"]["has_summary"] is False
    assert rows["b"]["messages"] == 20 and rows["b"]["has_summary"] is True
    shown = k.context.show("b")
    assert shown["count"] == 20 and [m["seq"] for m in shown["messages"]] == list(range(1, 21))
    assert shown["summary"]["source"] == "extractive"
    assert k.context.reset("b") == {"action": "reset", "session": "b", "existed": True, "messages_removed": 20}
    assert [s["session"] for s in k.context.sessions()["sessions"]] == ["a"]
    with pytest.raises(NotFoundError):
        k.context.show("b")
    assert k.context.reset("b") == {"action": "reset", "session": "b", "existed": False, "messages_removed": 0}
    # a reset session starts over
    assert k.context.add("b", role="user", text="hello again")["added"][0]["seq"] == 1
    assert k.context.build("b", "x", use_llm=False)["summary"] is None


# -- two processes ---------------------------------------------------------------------------------------

_WRITER = r"""
import os, sys, time
from kb_indexer.api import KnowledgeBase
db, who, go = sys.argv[1], sys.argv[2], sys.argv[3]
with KnowledgeBase.open(db) as kb:
    kb.context.sessions()                 # opened and ready before the start signal
    while not os.path.exists(go):
        time.sleep(0.002)
    for i in range(50):
        kb.context.add("shared", role="user" if i % 2 else "assistant", text=f"{who}-{i}")
        time.sleep(0.002)                 # leave the other writer a gap, so the two interleave
"""


def test_two_processes_adding_to_one_session_lose_nothing(k, tmp_path):
    go = tmp_path / "go"
    env = {"PYTHONPATH": str(REPO)}
    import os
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(k.db_path), who, str(go)],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for who in ("p1", "p2")]
    time.sleep(0.3)
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    shown = k.context.show("shared")
    assert shown["count"] == 100
    seqs = [m["seq"] for m in shown["messages"]]
    assert seqs == list(range(1, 101))
    contents = [m["content"] for m in shown["messages"]]
    assert sorted(contents) == sorted(f"{w}-{i}" for w in ("p1", "p2") for i in range(50))
    for who in ("p1", "p2"):                      # each writer's messages in its own order
        mine = [c for c in contents if c.startswith(who + "-")]
        assert mine == [f"{who}-{i}" for i in range(50)]


def test_an_answered_question_is_not_repeated_as_pending(k):
    k.context.add("q", [{"role": "user", "content": "open it"},
                        {"role": "assistant", "content": "Which workspace?"},
                        {"role": "user", "content": "the research one"}])
    out = k.context.build("q", "and close the old one", use_llm=False)
    assert out["last_assistant_question"] is None
    k.context.add("q", role="user", text="open workspace 5")        # record first, then build
    out = k.context.build("q", "open workspace 5", use_llm=False)
    assert out["stats"]["current_recorded"] and out["last_assistant_question"] is None


def test_a_question_recorded_then_built_is_still_pending(k):
    k.context.add("q2", [{"role": "user", "content": "open it"},
                         {"role": "assistant", "content": "Which workspace?!"},
                         {"role": "user", "content": "5"}])
    out = k.context.build("q2", "5", use_llm=False)                 # the agent recorded "5" first
    assert out["stats"]["current_recorded"] and out["last_assistant_question"] == "Which workspace?!"


def test_an_empty_message_is_refused_and_nothing_is_written(k):
    with pytest.raises(ValidationError, match="no text"):
        k.context.add("e", [{"role": "user", "content": "fine"}, {"role": "assistant", "content": "   "}])
    with pytest.raises(Exception):
        k.context.show("e")


def test_a_current_message_longer_than_the_cap_is_cut_to_fit_it(k):
    message = " ".join(f"item{i}" for i in range(100))
    out = k.context.build("cap", message, max_chars=200, use_llm=False)
    assert len(out["prompt"]) <= 200 and out["stats"]["over_max_chars"] is False
    assert out["stats"]["message_cut"] is True and "characters cut" in out["prompt"]
    assert out["prompt"].rstrip().endswith("item99") and "Current user message: item0 item1" in out["prompt"]
    assert out["message"]["normalised"] == message                     # the message itself is whole
    short = k.context.build("cap", "short", max_chars=200, use_llm=False)
    assert short["stats"]["message_cut"] is False and short["prompt"].endswith("Current user message: short")


def test_record_after_record_then_build_does_not_store_it_twice(k):
    k.context.add("rr", role="user", text="open workspace 5")
    out = k.context.build("rr", "open workspace 5", record=True, use_llm=False)
    assert out["stats"]["current_recorded"] and out["recorded"] == {"seq": None, "already": True}
    assert k.context.show("rr")["count"] == 1


@pytest.mark.parametrize("sid", ["   ", "a\nb", "tab\there", "zero\u200bwidth"])
def test_a_blank_or_control_character_session_id_is_bad_usage(k, sid):
    with pytest.raises(UsageError):
        k.context.add(sid, role="user", text="hello")


def test_the_rolling_summary_fills_its_600_characters_with_facts(k):
    facts = [f"I prefer option {c} for the {w} stage." for c, w in zip("ABCDEFGHIJ", (
        "ingest", "parse", "index", "rank", "cache", "serve", "log", "alert", "backup", "deploy"))]
    msgs = []
    for i, fact in enumerate(facts):
        msgs += [{"role": "user", "content": f"small talk {i}. {fact}"}, {"role": "assistant", "content": "Noted."}]
    k.context.add("fill", msgs + turns(8, start=50))
    summary = k.context.build("fill", "next", use_llm=False)["summary"]["text"]
    kept = [f for f in facts if f in summary]
    assert len(summary) <= SUMMARY_CHARS
    assert "small talk" not in summary                       # a bare count is not a fact
    assert len(summary) + len(min(facts, key=len)) + 8 > SUMMARY_CHARS or len(kept) == len(facts)
