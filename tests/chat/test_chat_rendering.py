"""The chat front end renders engine events: one dim line per informational event, the answer as markdown
streamed in a terminal, the per-turn JSON record, the toolbar, and slash commands that never reach the
model (against a fake engine: tests/chat_fake_engine.py)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.markdown import Markdown

from chat_fake_engine import RESULTS, Event, FakeEngine
from kb_indexer.chat.commands import is_command, run_command
from kb_indexer.chat.mdstream import MarkdownStream, RichRenderer
from kb_indexer.chat.render import TurnRecord, run_turn
from kb_indexer.chat.view import event_line, toolbar_text

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def test_each_informational_event_is_one_short_line():
    assert event_line("input", {"original": "how about workspace workspace 5", "normalised": "workspace 5"}) \
        == "read as: workspace 5"
    assert event_line("input", {"original": "hello", "normalised": "hello"}) is None
    assert event_line("skills", {"loaded": ["a", "b"], "newly_loaded": ["b"], "evicted": ["c"]}) \
        == "skills: a, b  +b  -c evicted"
    assert event_line("skills", {"loaded": [], "newly_loaded": [], "evicted": []}) is None
    line = event_line("retrieval", {"query_id": 7, "results": RESULTS * 3, "total": 40})
    assert line.startswith("retrieved 6 of 40 documents (query 7): notes/alpha.md (0.91), notes/beta.md (0.42)")
    assert line.endswith("+2 more") and "\n" not in line
    assert event_line("compression", {"level": 90, "tokens_before": 7400, "tokens_after": 3100, "stages": [],
                                      "fallback": None}) == "context compressed (level 90%): 7,400 → 3,100 tokens"
    assert event_line("tool_call", {"name": "query", "arguments": {"question": "x" * 300}}).endswith("…)")
    assert event_line("tool_result", {"name": "show", "ok": False, "summary": "no such file"}) \
        == "tool show → failed: no such file"
    assert event_line("note", {"message": "free mode"}) == "free mode"
    assert event_line("text", {"text": "x"}) is None


def test_the_toolbar_shows_model_context_use_and_loaded_skills():
    text = toolbar_text({"model": "ollama/llama3.2:3b", "window": 4096, "context_tokens": 1024,
                         "context_pct": 0.25, "loaded_skills": ["kbindex-search"]})
    assert text.strip() == "ollama/llama3.2:3b │ context 25% of 4,096 │ skills: kbindex-search"
    assert "context ?" in toolbar_text({}) and "skills: none" in toolbar_text({})


def test_a_turn_record_gathers_the_events_of_a_turn():
    engine = FakeEngine("kb")
    record = run_turn(engine, "tool please find alpha", None)
    out = record.to_dict()
    assert out["input"] == {"original": "tool please find alpha", "normalised": "tool find alpha"}
    assert out["answer"] == "**Answer** to: tool find alpha"
    assert out["citations"] == ["notes/alpha.md", "notes/beta.md"]
    assert out["skills"]["loaded"] == ["kbindex-search"] and out["retrieval"]["query_id"] == 7
    assert out["tools"] == [{"name": "query", "arguments": {"question": "alpha"}, "ok": True,
                             "summary": "2 documents"}]
    assert out["error"] is None and out["session"] == "s1"


def test_a_failing_turn_is_an_error_and_an_exception_from_the_engine_too():
    engine = FakeEngine("kb")
    assert run_turn(engine, "fail now", None).error["code"] == "llm_unavailable"

    class Broken(FakeEngine):
        def turn(self, text):
            yield Event("input", {"original": text, "normalised": text})
            raise RuntimeError("boom")

    record = run_turn(Broken(), "hi", None)
    assert record.error["code"] == "internal" and "boom" in record.error["message"]


def test_ctrl_c_closes_the_generator_so_the_turn_is_not_saved():
    engine = FakeEngine("kb")

    class Interrupting:
        def event(self, kind, data):
            if kind == "text":
                raise KeyboardInterrupt

        def close(self, cancelled=False):
            self.cancelled = cancelled

    renderer = Interrupting()
    record = run_turn(engine, "hello", renderer)
    assert record.cancelled and renderer.cancelled
    assert engine.cancelled == ["hello"] and engine.messages == []
    # the session goes on
    assert run_turn(engine, "again", None).answer == "**Answer** to: again" and len(engine.messages) == 2


def _terminal(width: int = 80, height: int = 25) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=width, height=height, color_system="standard"), buf


def test_a_streamed_answer_is_rendered_as_markdown_with_dim_lines_and_red_errors():
    console, out = _terminal()
    err_console, err = _terminal()
    engine = FakeEngine("kb")
    run_turn(engine, "hello", RichRenderer(console, err_console))
    text = ANSI.sub("", out.getvalue())
    assert "Answer to: hello" in text and "**" not in text       # markdown, not its source
    assert "\x1b[1mAnswer" in out.getvalue()                    # bold
    assert "\x1b[2mretrieved 2 of 5 documents" in out.getvalue()  # dim
    assert "sources: notes/alpha.md, notes/beta.md" in text
    run_turn(engine, "fail", RichRenderer(console, err_console))
    assert "\x1b[31merror (llm_unavailable): LLM ollama unreachable" in err.getvalue()


def test_an_answer_taller_than_the_screen_is_printed_whole_and_once():
    # Only the final render of a Live region reaches a file: what the stream printed above it plus that
    # render must be the markdown exactly once.
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=60, height=12)
    text = "\n".join(f"{i}. item number {i} with *emphasis*" for i in range(1, 61)) + "\n\nThe end."
    stream = MarkdownStream(console, min_interval=0)
    for i in range(0, len(text), 7):
        stream.add(text[i:i + 7])
    stream.close()
    expected = io.StringIO()
    Console(file=expected, force_terminal=False, width=60).print(Markdown(text))
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]
    assert lines == [line.rstrip() for line in expected.getvalue().splitlines()]
    assert stream.printed > 0        # lines above the live window were printed as it streamed


def test_without_streaming_the_whole_answer_still_renders():
    console, out = _terminal()
    run_turn(FakeEngine("kb", stream=False), "hello", RichRenderer(console, _terminal()[0]))
    assert "Answer to: hello" in ANSI.sub("", out.getvalue())


@pytest.mark.parametrize("line,command", [("/help", True), ("/resume abc", True), ("  /exit  ", True),
                                          ("/etc/hosts is missing", False), ("hello /help", False),
                                          ("/", False), ("/2024 was a year", False)])
def test_a_command_is_a_slash_and_a_word(line, command):
    assert is_command(line) is command


def test_slash_commands_answer_from_the_engine_without_a_turn():
    engine = FakeEngine("kb")
    run_turn(engine, "hello", None)
    assert run_command(engine, "/source").text.startswith("knowledge base notes: index /tmp/notes/kbindex.db")
    assert "[2] assistant: **Answer** to: hello" in run_command(engine, "/history").text
    ctx = run_command(engine, "/context").text
    assert "1) hello" in ctx and "about 120 tokens of a 8,192-token window (1%)" in ctx
    assert " * kbindex-search  priority active, matched 2 time(s)" in run_command(engine, "/skills").text
    assert run_command(engine, "/helpful notes/alpha.md").data["helpful"] == ["notes/alpha.md"]
    assert run_command(engine, "/unhelpful notes/beta.md").data["not_helpful"] == ["notes/beta.md"]
    assert run_command(engine, "/exit").exit and run_command(engine, "/quit").exit
    assert run_command(engine, "/clear").data == {"session": "s2"} and engine.history() == []
    resumed = run_command(engine, "/resume s1")
    assert resumed.error is None and engine.session_id == "s1" and "2 messages" in resumed.text
    assert "s1  2 messages" in run_command(engine, "/resume").text
    assert engine.turns == ["hello"]                    # no command started a turn


def test_unknown_and_failing_commands_say_why_and_never_reach_the_model():
    engine = FakeEngine("free")
    out = run_command(engine, "/serch foo")
    assert out.error["message"].startswith("unknown command /serch") and "/helpful FILE..." in out.text
    assert run_command(engine, "/helpful").error["code"] == "usage"
    assert "free mode" in run_command(engine, "/helpful a.md").error["message"]
    assert run_command(engine, "/resume nope").error["code"] == "not_found"
    assert run_command(engine, "/source").text.startswith("free mode")
    assert engine.turns == []


def test_a_turn_record_of_events_without_done_keeps_the_partial_answer():
    record = TurnRecord("hi", "s9")
    record.add("text", {"text": "par"})
    record.add("text", {"text": "tial"})
    record.add("error", {"message": "timeout", "code": "llm_timeout"})
    out = record.to_dict()
    assert out["answer"] == "partial" and out["error"] == {"code": "llm_timeout", "message": "timeout"}
    assert out["citations"] == [] and out["session"] == "s9"
