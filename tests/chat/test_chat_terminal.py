"""The interactive chat in a pseudo-terminal, over a fake engine (tests/chat_fake_engine.py): the prompt in
knowledge-base and free mode, the bottom toolbar, a streamed answer, slash commands, Ctrl-C during an answer
and at the prompt, Ctrl-D, and the input history kept across runs. (Through the real engine and the
installed `kbindex chat`: test_chat_cli.py.)

Keys are sent only once the prompt is back on the screen: typed while an answer is printed, they would go to
the terminal's line discipline (which swallows a Ctrl-D there) instead of to the prompt.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pty_session import PtySession
from tests.conftest import REPO

TESTS = Path(__file__).resolve().parents[1]
UP = b"\x1b[A"


@pytest.fixture
def chat(tmp_path):
    """``chat(mode)`` starts the terminal front end over the fake engine in a pseudo-terminal."""
    sessions = []
    log = tmp_path / "turns.log"

    def _start(mode: str = "kb") -> PtySession:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(TESTS)]),
                   KBINDEX_CHAT_HISTORY=str(tmp_path / "history"), FAKE_CHAT_LOG=str(log))
        term = PtySession([sys.executable, "-m", "chat_fake_engine", mode], env=env, cwd=tmp_path)
        sessions.append(term)
        return term

    _start.log = log
    yield _start
    for term in sessions:
        term.close()


def ready(term: PtySession, prompt: str = "kbindex[notes]>") -> None:
    """Wait for the prompt and then for the bottom toolbar, which prompt_toolkit draws once it reads keys."""
    term.expect(prompt)
    term.expect(" │ skills: ")


def _logged(chat) -> list[str]:
    return chat.log.read_text().splitlines() if chat.log.exists() else []


def test_the_prompt_names_the_knowledge_base_and_the_toolbar_shows_model_context_and_skills(chat):
    term = chat("kb")
    term.expect("knowledge base notes · fake/fake-model · session s1")
    term.expect("kbindex[notes]>")
    term.expect("fake/fake-model │ context 25% of 8,192 │ skills: none")
    term.send(b"hello\r")
    term.expect("kbindex[notes]> hello")           # the prompt exactly, its trailing space included
    term.expect("retrieved 2 of 5 documents (query 7)")
    term.expect("Answer to: hello")
    term.expect("sources: notes/alpha.md, notes/beta.md")
    term.expect("skills: kbindex-search ")        # the toolbar at the next prompt
    term.send(b"\x04")
    assert term.wait() == 0


def test_free_mode_has_the_plain_prompt(chat):
    term = chat("free")
    term.expect("free mode (no knowledge base)")
    ready(term, "kbindex>")
    term.send(b"hi\r")
    term.expect("kbindex> hi")
    term.expect("Answer to: hi")
    ready(term, "kbindex>")
    term.send(b"/source\r")
    term.expect("free mode (no knowledge base; conversation and skills only)")
    ready(term, "kbindex>")
    term.send(b"/exit\r")
    assert term.wait() == 0


def test_slash_commands_and_an_unknown_one_never_start_a_turn(chat):
    term = chat("kb")
    ready(term)
    for line, shown in [("/sauce", "unknown command /sauce"),
                        ("/source", "knowledge base notes: index /tmp/notes/kbindex.db"),
                        ("/helpful notes/alpha.md", "error: no retrieval yet in this session"),
                        ("/help", "Ctrl-D leaves.")]:
        term.send(line.encode() + b"\r")
        term.expect(shown)
        ready(term)                        # keys are sent only while the prompt reads them
    term.send(b"\x04")
    assert term.wait() == 0
    assert _logged(chat) == []


def test_ctrl_c_during_an_answer_cancels_it_and_returns_to_the_prompt(chat):
    term = chat("kb")
    ready(term)
    term.send(b"slow answer please\r")
    term.expect("Streaming")
    term.send(b"\x03")
    term.expect("answer cancelled")
    ready(term)
    term.send(b"hello\r")                          # the session goes on
    term.expect("Answer to: hello")
    ready(term)
    term.send(b"\x04")
    assert term.wait() == 0
    assert _logged(chat) == ["cancelled: slow answer please", "saved: hello"]


def test_alt_enter_starts_a_new_line_of_the_same_message(chat):
    term = chat("kb")
    ready(term)
    term.send(b"line one\x1b\rline two\r")     # Alt-Enter is Esc, Enter
    term.expect("Answer to: line one")
    ready(term)
    term.send(b"/history\r")
    term.expect("[1] user: line one\n    line two")
    ready(term)
    term.send(b"\x04")
    assert term.wait() == 0


def test_ctrl_c_at_the_prompt_clears_the_line(chat):
    term = chat("kb")
    ready(term)
    term.send(b"half a thought")
    term.expect("half a thought")
    term.send(b"\x03")
    ready(term)
    term.send(b"hello\r")
    term.expect("Answer to: hello")
    ready(term)
    term.send(b"\x04")
    assert term.wait() == 0
    assert _logged(chat) == ["saved: hello"]


def test_the_input_history_is_kept_across_runs(chat, tmp_path):
    term = chat("kb")
    ready(term)
    term.send(b"remember this line\r")
    term.expect("Answer to: remember this line")
    ready(term)
    term.send(b"\x04")
    assert term.wait() == 0
    assert "+remember this line" in (tmp_path / "history").read_text()
    term = chat("kb")
    ready(term)
    term.send(UP + b"\r")
    term.expect("Answer to: remember this line")
    ready(term)
    term.send(b"\x04")
    assert term.wait() == 0
