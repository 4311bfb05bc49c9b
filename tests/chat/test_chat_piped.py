"""Piped chat (stdin not a terminal): one answer per input line with nothing else on stdout, or one JSON
object per turn; slash commands work; a failed turn is reported and the next line still answered (against
a fake engine; the real one through `kbindex chat` is in test_chat_cli.py)."""

from __future__ import annotations

import io
import json

from chat_fake_engine import FakeEngine
from kb_indexer.chat.piped import run_lines


def _run(lines: str, fmt: str = "table", engine: FakeEngine | None = None):
    engine = engine or FakeEngine("kb")
    out, err = io.StringIO(), io.StringIO()
    code = run_lines(engine, io.StringIO(lines), out, err, fmt)
    return code, out.getvalue(), err.getvalue(), engine


def test_one_plain_answer_per_line_and_the_notes_on_stderr():
    code, out, err, engine = _run("hello\n\n   \nplease tell me more\n")
    assert code == 0
    assert out == "**Answer** to: hello\n**Answer** to: tell me more\n"       # no prompt, no colour
    assert "\x1b" not in out + err
    assert "retrieved 2 of 5 documents (query 7)" in err and "sources: notes/alpha.md, notes/beta.md" in err
    assert "read as: tell me more" in err
    assert engine.turns == ["hello", "please tell me more"]                # blank lines are not turns


def test_json_gives_one_object_per_turn():
    code, out, err, _ = _run("tool please find alpha\nhi\n", "json")
    assert code == 0 and err == ""
    first, second = (json.loads(line) for line in out.splitlines())
    assert set(first) >= {"input", "answer", "citations", "skills", "retrieval", "tools", "error", "session"}
    assert first["input"] == {"original": "tool please find alpha", "normalised": "tool find alpha"}
    assert first["answer"] == "**Answer** to: tool find alpha" and first["error"] is None
    assert first["citations"] == ["notes/alpha.md", "notes/beta.md"]
    assert first["tools"][0]["name"] == "query" and first["tools"][0]["ok"] is True
    assert first["retrieval"]["total"] == 5 and first["skills"]["loaded"] == ["kbindex-search"]
    assert second["answer"] == "**Answer** to: hi" and second["session"] == "s1"


def test_a_failed_turn_is_reported_the_rest_answered_and_the_exit_code_is_1():
    code, out, err, _ = _run("fail first\nthen this\n")
    assert code == 1
    assert out == "**Answer** to: then this\n"
    assert "error (llm_unavailable): LLM ollama unreachable" in err
    code, out, _, _ = _run("fail first\nthen this\n", "json")
    objs = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and objs[0]["error"]["code"] == "llm_unavailable" and objs[0]["answer"] is None
    assert objs[1]["error"] is None


def test_slash_commands_work_piped_and_exit_stops_reading():
    code, out, _, engine = _run("hello\n/history\n/exit\nnever sent\n")
    assert code == 0 and engine.turns == ["hello"]
    assert out.splitlines()[1:] == ["[1] user: hello", "[2] assistant: **Answer** to: hello"]
    code, out, _, engine = _run("/source\n/nope\n", "json")
    source, unknown = (json.loads(line) for line in out.splitlines())
    assert source == {"command": "source", "result": engine.source, "error": None}
    assert unknown["error"]["code"] == "usage" and code == 1 and engine.turns == []


def test_free_mode_feedback_is_an_error_not_a_crash():
    code, out, err, _ = _run("/helpful a.md\nhello\n", engine=FakeEngine("free"))
    assert code == 1 and "error: free mode has no knowledge base" in err
    assert out == "**Answer** to: hello\n"
