"""`kbindex chat` end to end: the installed command running this checkout's code (PYTHONPATH) with the real
chat engine and a scripted LLM (``--llm-backend fake``, tests/fake_llm.py), through piped stdin and through a
pseudo-terminal: the prompt in knowledge-base and free mode, answers, slash commands, JSON per turn, Ctrl-C
during a streamed answer, Ctrl-D, --list and --resume, and the start-up checks."""

from __future__ import annotations

import json
import os
import re

import pytest

from pty_session import PtySession
from tests.conftest import REPO, kbindex_exe

ANSWER = "AlphaGo combines **Monte Carlo tree search** with networks [alphago-architecture.md]."
KB_PROMPT = "kbindex[knowledge-base]>"


@pytest.fixture
def chat_env(tmp_path):
    """``chat_env(*steps)`` writes the LLM script and returns the environment for a `kbindex chat` run."""
    script = tmp_path / "llm-script.json"

    def _env(*steps) -> dict:
        script.write_text(json.dumps(list(steps)))
        return {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script), "KBINDEX_LLM_RETRIES": "0",
                "KBINDEX_CHAT_DB": str(tmp_path / "store" / "chat.db"),
                "KBINDEX_CHAT_HISTORY": str(tmp_path / "input-history")}

    return _env


def _chat(run, env, *args, input: str = "", cwd=None):
    return run("chat", "--llm-backend", "fake", *args, input=input, env=env, cwd=cwd)


# -- piped ------------------------------------------------------------------------------------------------

def test_piped_one_answer_per_line_with_slash_commands(run, kb, chat_env):
    env = chat_env({"text": ANSWER}, {"text": "A second answer."})
    res = _chat(run, env, "--db", kb.db_path,
                input="how about monte carlo tree search please\n/source\n\nand the networks?\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        ANSWER, f"knowledge base knowledge-base: index {kb.db_path}, files in {kb.kb_root}", "A second answer."]
    assert "\x1b" not in res.stdout and "kbindex[" not in res.stdout     # no prompt, no colour
    assert "read as: monte carlo tree search" in res.stderr
    # the bundled MCTS note ranks first for this question; the answer cites the AlphaGo one, also retrieved
    assert re.search(r"retrieved \d+ of \d+ documents? \(query \d+\): monte-carlo-tree-search\.md \([\d.]+\), "
                     r"alphago-architecture\.md", res.stderr)
    assert "sources: alphago-architecture.md" in res.stderr


def test_piped_json_gives_one_object_per_turn_and_the_session_can_be_listed_and_resumed(run, kb, chat_env):
    env = chat_env({"text": ANSWER}, {"error": "unavailable", "message": "connection refused"},
                   {"text": "Still here."})
    res = _chat(run, env, "--db", kb.db_path, "--format", "json",
                input="monte carlo tree search\nwhat else?\nthe policy network\n")
    assert res.returncode == 1                        # a turn failed; the others were answered
    first, failed, third = (json.loads(line) for line in res.stdout.splitlines())
    assert first["input"] == {"original": "monte carlo tree search", "normalised": "monte carlo tree search"}
    assert first["answer"] == ANSWER and first["citations"] == ["alphago-architecture.md"]
    assert [r["path"] for r in first["retrieval"]["results"][:2]] == ["monte-carlo-tree-search.md",
                                                                     "alphago-architecture.md"]
    assert first["error"] is None
    assert failed["error"]["code"] == "llm_unavailable" and failed["answer"] is None
    assert third["answer"] == "Still here." and third["session"] == first["session"]
    session = first["session"]

    listed = run("chat", "--list", "--db", kb.db_path, "-f", "json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [(s["session"], s["messages"]) for s in listed.json()["sessions"]] == [(session, 4)]
    table = run("chat", "--list", "--db", kb.db_path, env=env)
    assert session in table.stdout

    env = chat_env()
    res = _chat(run, env, "--db", kb.db_path, "--resume", session, "-f", "json", input="/history\n")
    assert res.returncode == 0, res.stderr
    history = json.loads(res.stdout)["result"]["messages"]
    assert [m["content"] for m in history] == ["monte carlo tree search", ANSWER, "the policy network",
                                               "Still here."]


def test_a_tool_call_is_shown_in_one_line(run, kb, chat_env):
    env = chat_env({"text": "", "tool_calls": [{"name": "kb_show", "arguments": {"path": "alphago-architecture.md"}}]},
                   {"text": "It has a policy network [alphago-architecture.md]."})
    res = _chat(run, env, "--db", kb.db_path, input="what is in the alphago document\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "It has a policy network [alphago-architecture.md].\n"
    assert 'tool kb_show({"path": "alphago-architecture.md"})' in res.stderr
    assert "tool kb_show → read alphago-architecture.md" in res.stderr


# -- start-up -----------------------------------------------------------------------------------------------

def test_an_unusable_llm_is_a_clear_message_and_exit_1(run, kb, chat_env):
    env = {**chat_env(), "OLLAMA_HOST": "http://127.0.0.1:9"}
    res = run("chat", "--db", kb.db_path, "--llm-backend", "ollama", input="hello\n", env=env)
    assert res.returncode == 1
    assert res.stderr.startswith("Error: LLM ollama") and "127.0.0.1:9" in res.stderr
    assert "kbindex doctor" in res.stderr and "Traceback" not in res.stderr and res.stdout == ""
    res = run("chat", "--db", kb.db_path, "--llm-backend", "ollama", "-f", "json", input="hello\n", env=env)
    assert res.returncode == 1 and res.error()["code"] == "llm_unavailable"


def test_db_and_free_together_are_bad_usage(run, cli, kb, chat_env):
    res = run("chat", "--db", kb.db_path, "--free", env=chat_env())
    assert res.returncode == 2 and "--db and --free" in res.stderr
    res = cli("chat", "--db", kb.db_path, "--free", "-f", "json")
    assert res.exit_code == 2 and json.loads(res.stderr)["error"]["code"] == "usage"


def test_no_index_found_is_free_mode_with_a_note(run, tmp_path, chat_env):
    env = chat_env({"text": "Hello there."})
    res = _chat(run, env, input="/source\nhi\n", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith("note: ") and "--db PATH" in res.stderr.splitlines()[0]
    out = res.stdout.splitlines()
    assert out[0].startswith("free mode (no knowledge base") and out[1] == "Hello there."


# -- in a terminal ------------------------------------------------------------------------------------------

@pytest.fixture
def terminal(run):
    """``terminal(env, *args, cwd=...)`` starts `kbindex chat --llm-backend fake ...` in a pseudo-terminal."""
    opened = []

    def _start(env: dict, *args: str, cwd) -> PtySession:
        term = PtySession([*kbindex_exe(), "chat", "--llm-backend", "fake", *args], env={**os.environ, **env},
                          cwd=cwd)
        opened.append(term)
        return term

    yield _start
    for term in opened:
        term.close()


def ready(term: PtySession, prompt: str = KB_PROMPT) -> None:
    """The prompt, then the bottom toolbar (drawn once prompt_toolkit reads keys: only then are keys sent)."""
    term.expect(prompt)
    term.expect(" │ skills: ")


def test_in_a_terminal_answers_stream_and_ctrl_c_cancels_one(terminal, run, kb, chat_env):
    env = chat_env({"text": ANSWER}, {"text": " ".join(["step"] * 2000), "delay": 0.05}, {"text": "Back again."})
    term = terminal(env, "--db", str(kb.db_path), cwd=kb.db_path.parent)
    term.expect("kbindex chat · knowledge base knowledge-base · fake/fake-model")
    ready(term)
    term.send(b"monte carlo tree search\r")
    term.expect(f"{KB_PROMPT} monte carlo tree search")      # the prompt exactly, its trailing space too
    term.expect("Monte Carlo tree search with networks")      # rendered markdown: no ** left
    term.expect("sources: alphago-architecture.md")
    ready(term)
    term.send(b"tell me everything about it step by step\r")
    term.expect("step step")
    term.send(b"\x03")
    term.expect("answer cancelled")
    ready(term)
    term.send(b"/history\r")
    term.expect(f"[2] assistant: {ANSWER}")
    term.expect("[4] assistant: step step")                   # the cancelled answer's start, kept
    term.expect("answer cancelled by the user")
    ready(term)
    term.send(b"and then?\r")
    term.expect("Back again.")
    ready(term)
    term.send(b"\x04")
    assert term.wait() == 0
    session = run("chat", "--list", "--db", kb.db_path, "-f", "json", env=env).json()["sessions"][0]
    assert session["messages"] == 6          # the cancelled turn was saved, marked cancelled
    assert session["first_message"] == "monte carlo tree search"


def test_in_a_terminal_free_mode_has_the_plain_prompt(terminal, tmp_path, chat_env):
    term = terminal(chat_env({"text": "Hi!"}), cwd=tmp_path)
    term.expect("note: ")
    term.expect("free mode (no knowledge base)")
    ready(term, "kbindex>")
    term.send(b"hello\r")
    term.expect("kbindex> hello")
    term.expect("Hi!")
    ready(term, "kbindex>")
    term.send(b"/sources\r")                 # a typo: help, not a turn
    term.expect("unknown command /sources")
    ready(term, "kbindex>")
    term.send(b"\x04")
    assert term.wait() == 0


def test_feedback_on_the_last_retrieval_and_an_over_window_note(run, kb, chat_env):
    env = chat_env({"text": ANSWER}, {"text": "Both networks guide the search."})
    res = _chat(run, env, "--db", kb.db_path, "--window", "600",
                input="monte carlo tree search\n/helpful alphago-architecture.md\n/unhelpful not-indexed.md\n"
                      "what about the policy network and the value network in detail\n")
    assert res.returncode == 1                                   # the second feedback failed
    out = res.stdout.splitlines()
    assert out[0] == ANSWER
    assert re.fullmatch(r"marked helpful: alphago-architecture\.md \(query \d+; `kbindex learn` applies it\)", out[1])
    assert "error: Not in the index: not-indexed.md" in res.stderr
    # a 600-token window leaves 450 for the prompt: the retrieved documents alone overflow it, nothing older
    # can be summarised away, so the system message is cut to fit, and the user is told
    assert "the system message (instructions, documents) cut to fit" in res.stderr and "raise --window" in res.stderr
    assert "the context is still" not in res.stderr
    assert out[-1] == "Both networks guide the search."


def test_a_killed_chat_resumes_with_every_finished_turn(terminal, run, kb, chat_env):
    env = chat_env({"text": ANSWER}, {"text": " ".join(["slow"] * 2000), "delay": 0.05})
    term = terminal(env, "--db", str(kb.db_path), cwd=kb.db_path.parent)
    ready(term)
    term.send(b"monte carlo tree search\r")
    term.expect("sources: alphago-architecture.md")
    ready(term)
    term.send(b"and now a long one\r")
    term.expect("slow slow")
    term.proc.kill()                                  # kill -9 in the middle of an answer
    term.wait()
    sessions = run("chat", "--list", "--db", kb.db_path, "-f", "json", env=env).json()["sessions"]
    assert [s["messages"] for s in sessions] == [2]
    res = _chat(run, chat_env(), "--db", kb.db_path, "--resume", sessions[0]["session"], input="/history\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["[1] user: monte carlo tree search", f"[2] assistant: {ANSWER}"]


def test_a_program_can_converse_line_by_line_through_pipes(kb, chat_env):
    # each answer is flushed before the next line is read: a script can wait for it, then ask again
    import subprocess

    env = {**os.environ, **chat_env({"text": ANSWER}, {"text": "Second."})}
    proc = subprocess.Popen([*kbindex_exe(), "chat", "--llm-backend", "fake", "--db", str(kb.db_path), "-f", "json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    try:
        proc.stdin.write("monte carlo tree search\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["answer"] == ANSWER
        proc.stdin.write("and then?\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["answer"] == "Second."
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
