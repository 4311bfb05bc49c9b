"""The chat engine with a scripted LLM: the events of a turn, tools, free mode, failures, cancel, resume,
feedback and compression in a long session."""

from __future__ import annotations

import pytest

from fake_llm import FakeBackend
from kb_indexer.chat.engine import CANCELLED_MARK, FREE_KB_NOTE, ChatEngine
from kb_indexer.chat.source import open_source
from kb_indexer.chat.tools import MAX_TOOL_ROUNDS
from kb_indexer.errors import NotFoundError, UsageError
from kb_indexer.llm.base import Completion, LLMServerError, LLMUnavailable, ToolCall
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient


def engine_for(db, *answers, free=False, window=None, stream=True):
    kb, source, note = open_source(None if free else db, free)
    fake = FakeBackend(list(answers))
    client = LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kb.conn, backend=fake,
                       sleep=lambda s: None)
    return ChatEngine(kb, source, note, client=client, window=window, stream=stream), fake


@pytest.fixture
def chat_store(tmp_path, monkeypatch):
    monkeypatch.setenv("KBINDEX_CHAT_DB", str(tmp_path / "store" / "chat.db"))
    return tmp_path / "store" / "chat.db"


@pytest.fixture
def kbchat(kb, chat_store):
    engines = []

    def make(*answers, **kw):
        eng, fake = engine_for(kb.db_path, *answers, **kw)
        engines.append(eng)
        return eng, fake
    yield make
    for e in engines:
        e.close()


def kinds(events):
    return [e.kind for e in events]


def test_a_kb_turn_retrieves_streams_cites_and_saves(kbchat):
    eng, fake = kbchat("AlphaGo combines MCTS with networks [alphago-architecture.md].")
    assert eng.prompt == "kbindex[knowledge-base]> " and eng.source.mode == "kb"
    events = list(eng.turn("how about monte carlo tree search please"))
    assert kinds(events)[0] == "input" and events[0].data["normalised"] == "monte carlo tree search"
    retrieval = next(e for e in events if e.kind == "retrieval").data
    assert "alphago-architecture.md" in [r["path"] for r in retrieval["results"]] and retrieval["query_id"]
    assert "".join(e.data["text"] for e in events if e.kind == "text") == fake_answer(events)
    done = events[-1]
    assert done.kind == "done" and done.data["citations"] == ["alphago-architecture.md"]
    system = fake.calls[0]["messages"][0]["content"]
    assert "## Related Knowledge" in system and "alphago-architecture.md" in system
    assert fake.calls[0]["messages"][-1] == {"role": "user", "content": "monte carlo tree search"}
    assert fake.calls[0]["tools"] == ["kb_query", "kb_show", "kb_similar"]
    history = eng.history()
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[0]["content"] == "how about monte carlo tree search please"     # the original is kept
    assert eng.kb.learning.history(limit=5)["queries"][0]["question"].startswith("monte carlo")  # recorded like any query


def fake_answer(events):
    return next(e for e in events if e.kind == "done").data["answer"]


def test_a_tool_call_round_trip(kbchat):
    eng, fake = kbchat(Completion(text="", tool_calls=[ToolCall("kb_show", {"path": "alphago-architecture.md"}, "c1")]),
                       "It has a policy network [alphago-architecture.md].")
    events = list(eng.turn("what is in the alphago document"))
    call = next(e for e in events if e.kind == "tool_call").data
    result = next(e for e in events if e.kind == "tool_result").data
    assert call["name"] == "kb_show" and result["ok"] is True
    second = fake.calls[1]["messages"]
    assert second[-2]["role"] == "assistant" and second[-1]["role"] == "tool"
    assert "AlphaGo" in second[-1]["content"] and second[-1]["tool_call_id"] == "c1"
    assert events[-1].kind == "done"


def test_a_bad_tool_call_is_an_error_for_the_model_not_a_crash(kbchat):
    eng, fake = kbchat(Completion(text="", tool_calls=[ToolCall("kb_show", {"path": "../etc/passwd"}, "c1")]),
                       "That document is not in the knowledge base.")
    events = list(eng.turn("show me ../etc/passwd"))
    assert next(e for e in events if e.kind == "tool_result").data["ok"] is False
    assert fake.calls[1]["messages"][-1]["content"].startswith("error:")
    assert events[-1].kind == "done"


def test_the_tool_loop_is_bounded(kbchat):
    loop = [Completion(text="", tool_calls=[ToolCall("kb_similar", {"keyword": "mcts"}, f"c{i}")])
            for i in range(MAX_TOOL_ROUNDS)]
    eng, fake = kbchat(*loop, "Done looking.")
    events = list(eng.turn("keep searching about mcts forever"))
    assert sum(e.kind == "tool_call" for e in events) == MAX_TOOL_ROUNDS
    assert fake.calls[-1]["tools"] == []                   # the last round offers no tools
    assert events[-1].kind == "done" and events[-1].data["answer"] == "Done looking."


def test_free_mode_has_no_tools_or_retrieval_and_explains_kb_requests(tmp_path, chat_store, monkeypatch):
    monkeypatch.chdir(tmp_path)                            # no kbindex.db here or above
    eng, fake = engine_for(None, "I cannot search a knowledge base here.")
    try:
        assert eng.source.mode == "free" and eng.prompt == "kbindex> " and "free mode" in eng.note
        events = list(eng.turn("search my notes for the retry policy"))
        assert "retrieval" not in kinds(events) and "tool_call" not in kinds(events)
        assert next(e for e in events if e.kind == "note").data["message"] == FREE_KB_NOTE
        assert fake.calls[0]["tools"] == [] and "free mode" in fake.calls[0]["messages"][0]["content"]
        assert chat_store.is_file() and eng.history()           # saved in the per-user chat store
        with pytest.raises(UsageError, match="free mode"):
            eng.feedback(["x.md"], [])
    finally:
        eng.close()


def test_db_and_free_exclude_each_other(kb, chat_store):
    with pytest.raises(UsageError):
        open_source(kb.db_path, True)


def test_an_llm_failure_is_an_error_event_and_the_session_goes_on(kbchat):
    eng, fake = kbchat(LLMUnavailable("connection refused"), "Back again.")
    events = list(eng.turn("hello there, what is MCTS"))
    assert events[-1].kind == "error" and "connection refused" in events[-1].data["message"]
    assert eng.history() == []                             # the failed turn is not saved
    assert list(eng.turn("what is MCTS"))[-1].kind == "done"
    assert len(eng.history()) == 2


def test_a_model_without_tool_calling_is_asked_again_without_tools(kbchat):
    eng, fake = kbchat(LLMServerError("model does not support tools", status=400), "Plain answer.")
    events = list(eng.turn("what is monte carlo tree search"))
    assert events[-1].kind == "done" and fake.calls[1]["tools"] == [] and eng.tools_ok is False


def test_a_cancelled_answer_keeps_its_partial_text_marked_cancelled(kbchat):
    eng, fake = kbchat("one two three four five six", "Second answer.")
    gen = eng.turn("tell me about alphago")
    for event in gen:
        if event.kind == "text":
            break                                          # Ctrl-C in the middle of the stream
    gen.close()
    saved = [(m["role"], m["content"]) for m in eng.history()]
    assert saved == [("user", "tell me about alphago"), ("assistant", "one\n\n" + CANCELLED_MARK)]
    assert list(eng.turn("and now?"))[-1].kind == "done" and len(eng.history()) == 4
    sent = fake.calls[-1]["messages"]                     # the next turn's model sees the cancelled answer
    assert any(m["role"] == "assistant" and CANCELLED_MARK in m["content"] for m in sent)


def test_resume_continues_a_saved_session(kbchat, kb):
    eng, _ = kbchat("First answer.")
    list(eng.turn("remember that we chose PPO over DQN"))
    sid = eng.session_id
    other, fake = kbchat("You chose PPO.")
    other.resume(sid)
    list(other.turn("which algorithm did we choose?"))
    sent = fake.calls[0]["messages"]
    assert any("we chose PPO over DQN" in m["content"] for m in sent[1:])
    assert len(other.history()) == 4
    listed = ChatEngine.list_sessions(kb.db_path)
    assert sid in [s["session"] for s in listed["sessions"]]
    with pytest.raises(NotFoundError):
        other.resume("chat-does-not-exist")


def test_clear_starts_an_empty_context(kbchat):
    eng, fake = kbchat("A.", "B.")
    list(eng.turn("we chose PPO over DQN for the agent"))
    old = eng.session_id
    assert eng.clear() != old and eng.history() == []
    list(eng.turn("which did we choose?"))
    assert not any("PPO" in m["content"] for m in fake.calls[1]["messages"][1:])


def test_feedback_goes_to_the_last_retrieval(kbchat):
    eng, _ = kbchat("MCTS [alphago-architecture.md].")
    with pytest.raises(UsageError, match="no retrieval"):
        eng.feedback(["alphago-architecture.md"], [])
    list(eng.turn("monte carlo tree search in alphago"))
    out = eng.feedback(["alphago-architecture.md"], [])
    assert out["query_id"] == eng.last_query_id and out["recorded"][0]["helpful"] is True


class SummarisingFake(FakeBackend):
    """Chat answers from the queue; every structured (summary) request answered with one short summary."""

    def complete_json(self, messages, schema, **kw):
        self._record({"kind": "complete_json", "task": kw.get("task")})
        return Completion(text='{"summary": "Earlier they decided batch sizes from 100 up."}')


def test_a_long_session_is_compressed_and_still_answers(kb, chat_store):
    answers = [f"Answer {i}: " + "detail " * 120 for i in range(14)]
    kbx, source, note = open_source(kb.db_path, False)
    fake = SummarisingFake(answers)
    client = LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kbx.conn, backend=fake)
    eng = ChatEngine(kbx, source, note, client=client, window=1500)
    compressed = []
    for i in range(14):
        events = list(eng.turn(f"question {i}: we decided to use batch size {100 + i}; explain exploration"))
        assert events[-1].kind == "done"
        compressed += [e.data for e in events if e.kind == "compression"]
    assert compressed and compressed[-1]["tokens_after"] < compressed[-1]["tokens_before"]
    last = fake.calls[-1]["messages"]
    assert last[0]["role"] == "system" and last[-1]["content"].startswith("question 13")
    assert eng.status()["context_pct"] < 100
    assert any(c["kind"] == "complete_json" for c in fake.calls)          # summarised by the LLM
    eng.close()


def test_without_streaming_the_answer_is_one_text_event(kbchat):
    eng, _ = kbchat("Whole answer at once.", stream=False)
    events = list(eng.turn("what is alphago"))
    assert [e.data["text"] for e in events if e.kind == "text"] == ["Whole answer at once."]


def test_check_llm_explains_an_unusable_backend(kb, chat_store, monkeypatch):
    kbx, source, note = open_source(kb.db_path, False)
    none = ChatEngine(kbx, source, note, llm=LLMOptions(backend="none"))
    with pytest.raises(UsageError, match="chat needs an LLM.*kbindex doctor"):
        none.check_llm()
    none.close()
    monkeypatch.setenv("KBINDEX_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    kbx, source, note = open_source(kb.db_path, False)
    down = ChatEngine(kbx, source, note, llm=LLMOptions(backend="openai", model="m", timeout=2))
    with pytest.raises(LLMUnavailable, match="not reachable|cannot be used"):
        down.check_llm(timeout=2)
    down.close()


def test_skills_from_kbindex_skills_are_synced_at_start_and_loaded_into_the_prompt(kb, chat_store, tmp_path,
                                                                                monkeypatch):
    from helpers import write_skills
    write_skills(tmp_path / "skills", {"weather-report": ("Get the weather forecast for a city.",
                                                          "Call the forecast API with the city name.")})
    monkeypatch.setenv("KBINDEX_SKILLS", str(tmp_path / "skills"))
    fake = FakeBackend([{"skills": [{"name": "weather-report", "reason": "asks for a forecast"}]}, "Sunny."])
    eng = ChatEngine.open(kb.db_path, client=None, llm=LLMOptions(backend="fake"))
    eng.client._backend = fake
    try:
        events = list(eng.turn("what is the weather forecast for Paris"))
        skills = next(e for e in events if e.kind == "skills").data
        assert skills["newly_loaded"] == ["weather-report"] and skills["method"] == "llm"
        assert [c["kind"] for c in fake.calls] == ["complete_json", "chat"]
        assert "Call the forecast API" in fake.calls[1]["messages"][0]["content"]
        assert eng.status()["loaded_skills"] == ["weather-report"]
    finally:
        eng.close()


def test_only_a_follow_up_is_searched_with_the_previous_message(kbchat):
    eng, _ = kbchat("A.", "B.", "C.")
    list(eng.turn("tell me about alphago and monte carlo tree search"))
    assert eng._retrieval_question("what is q learning") == "what is q learning"
    assert eng._retrieval_question("explain DQN") == "explain DQN"
    assert eng._retrieval_question("and the networks?").startswith("tell me about alphago")
    assert eng._retrieval_question("why?").endswith("why?") and "alphago" in eng._retrieval_question("why?")


@pytest.mark.parametrize("text,asks", [
    ("search my notes for the retry policy", True), ("check our knowledge base for PPO", True),
    ("what do my notes say about retries", True), ("Help me write a document for my boss", False),
    ("what is a wiki?", False), ("find the max of a list and its index", False),
])
def test_free_mode_explains_only_real_knowledge_base_requests(text, asks):
    from kb_indexer.chat.engine import _KB_REQUEST
    assert bool(_KB_REQUEST.search(text)) is asks


def test_a_follow_up_after_a_very_long_message_is_searched_and_answered(kbchat):
    from kb_indexer.limits import MAX_QUERY_CHARS

    eng, _ = kbchat("Read it.", "Because.", window=200_000)
    long = "alphago " * 4_000                                                   # 32,000 characters
    assert list(eng.turn(long))[-1].kind == "done"
    question = eng._retrieval_question("and why?")
    assert question.startswith("alphago") and question.endswith("and why?") and len(question) < MAX_QUERY_CHARS
    events = list(eng.turn("and why?"))
    assert [e.kind for e in events][-1] == "done" and "retrieval" in kinds(events)


def test_a_message_longer_than_the_skill_matcher_takes_is_answered(kbchat):
    eng, fake = kbchat("Read it all.", window=100_000)
    long = " ".join(f"line{i} of a pasted log" for i in range(5000))           # ~100k characters
    events = list(eng.turn(long))
    assert events[-1].kind == "done" and fake.calls[0]["messages"][-1]["content"] == long


def test_a_prompt_over_the_window_is_cut_to_fit_it_said_and_room_is_kept_for_the_answer(kbchat):
    eng, fake = kbchat("Short.", window=600)
    message = "monte carlo tree search " + "with many details " * 200 + "so what is the value network?"
    events = list(eng.turn(message))
    note = [e.data["message"] for e in events if e.kind == "note"]
    assert note and "cut to fit" in note[0] and "raise --window" in note[0]
    assert eng.prompt_room() == 600 - 150
    sent = fake.calls[0]["messages"]
    assert eng.kb.context.tokens(sent) <= eng.prompt_room()          # what the server gets fits its window
    assert sent[-1]["content"].startswith("monte carlo tree search with many details")
    assert sent[-1]["content"].endswith("so what is the value network?") and "characters cut" in sent[-1]["content"]
    assert eng.history()[0]["content"] == message                       # the session keeps the message whole


def test_text_of_successive_tool_rounds_is_kept_apart(kbchat):
    eng, _ = kbchat(Completion(text="Let me look.", tool_calls=[ToolCall("kb_similar", {"keyword": "mcts"}, "c1")]),
                    "Found it.")
    answer = list(eng.turn("what relates to mcts"))[-1].data["answer"]
    assert answer == "Let me look.\n\nFound it."


def test_the_context_estimate_after_resume_counts_the_saved_turns(kbchat):
    eng, _ = kbchat("First answer " * 50)
    list(eng.turn("we chose PPO over DQN for the agent"))
    other, _ = kbchat()
    other.resume(eng.session_id)
    assert other.context_tokens > 100 and other.context_preview()["tokens"] == other.context_tokens


def test_chat_answers_get_a_longer_default_deadline(kb, chat_store, monkeypatch):
    from kb_indexer.chat.engine import CHAT_TIMEOUT
    monkeypatch.delenv("KBINDEX_LLM_TIMEOUT", raising=False)
    kbx, source, note = open_source(kb.db_path, False)
    eng = ChatEngine(kbx, source, note, llm=LLMOptions(backend="fake"))
    assert eng.client.config.timeout == CHAT_TIMEOUT
    eng.close()
    kbx, source, note = open_source(kb.db_path, False)
    eng = ChatEngine(kbx, source, note, llm=LLMOptions(backend="fake", timeout=7))
    assert eng.client.config.timeout == 7
    eng.close()


def test_a_tool_call_the_model_was_not_offered_is_never_run(tmp_path, chat_store, monkeypatch):
    """Free mode offers no tools; a model (or a hostile server) that calls one anyway gets nothing run:
    no query recorded in the chat store, no file read (the review found both before the fix)."""
    monkeypatch.chdir(tmp_path)
    eng, fake = engine_for(None, Completion(text="Here.", tool_calls=[
        ToolCall("kb_query", {"question": "reinforcement learning"}, "c1"),
        ToolCall("kb_show", {"path": "notes.md"}, "c2")]))
    try:
        events = list(eng.turn("what is reinforcement learning?"))
        assert fake.calls[0]["tools"] == []
        assert "tool_call" not in kinds(events) and "tool_result" not in kinds(events)
        assert len(fake.calls) == 1 and events[-1].kind == "done" and fake_answer(events) == "Here."
        assert eng.kb.learning.history(limit=5)["count"] == 0
    finally:
        eng.close()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["NaN", "Infinity"])
def test_a_tool_call_with_a_number_that_is_not_finite_stays_json(kbchat, bad):
    """A model's tool call with ``"limit": NaN`` (or 1e400) was echoed as is, so `chat --format json` printed a
    line no JSON parser reads. Such a number is null from the backend on (the tool then uses its default)."""
    import json

    eng, _ = kbchat(Completion(text="", tool_calls=[ToolCall("kb_query", {"question": "RL", "limit": bad,
                                                                       "deep": [{"x": bad}]}, "c1")]), "Done.")
    events = list(eng.turn("tell me about RL"))
    call = next(e for e in events if e.kind == "tool_call").data
    assert call["arguments"] == {"question": "RL", "limit": None, "deep": [{"x": None}]}
    for e in events:
        json.dumps(e.data, allow_nan=False)
    assert next(e for e in events if e.kind == "tool_result").data["ok"] is True
