"""Text from documents (titles, keywords, paths, snippets) and from the model reaches a terminal as text:
escape sequences (CSI, OSC, their 8-bit C1 forms), other control characters and bidi overrides are dropped
from every human-readable output (tables, markdown, plain text, interactive chat); JSON keeps the data as
it is (``json.dumps`` escapes control characters)."""

from __future__ import annotations

import json
import os

import pytest

from pty_session import PtySession
from tests.conftest import REPO, kbindex_exe

CLEAR = "\x1b[2J"
TITLE_OSC = "\x1b]0;pwned\x07"
C1_CSI = "\x9b31m"
BIDI = "\u202e"
MARKS = "\u200e\u200f\u061c"   # left-to-right, right-to-left and Arabic letter marks
EVIL = f"{CLEAR}{TITLE_OSC}{C1_CSI}{BIDI}{MARKS}"


def assert_clean(text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text
                  if c == "\x1b" or "\x80" <= c <= "\x9f" or c in "\x07\x00\u202e\u2066" or c in MARKS})
    assert not bad, f"terminal controls in the output: {bad}\n{text!r}"


@pytest.fixture
def evil_kb(small):
    """An index with one document whose title, body, summary and keywords carry terminal escapes."""
    handle, kbdir = small
    (kbdir / "evil.md").write_text(f"# Evil {EVIL}title\n\nReinforcement {CLEAR}learning{C1_CSI} with "
                                   f"policy gradients {TITLE_OSC}and rewards.\n", encoding="utf-8")
    (kbdir / "evil.keywords.json").write_text(json.dumps({
        "filepath": "evil.md", "title": f"Evil {EVIL}title", "summary": f"about {EVIL}escapes",
        # A keyword may not hold a control character (refused with its file); a bidi override it may.
        "keywords": [f"rein{BIDI}forcement", f"policy{BIDI} gradient", "reinforcement learning"]}),
        encoding="utf-8")
    result = handle.sync()
    assert result["errors"] == [], result["errors"]
    return handle


HUMAN_COMMANDS = [
    ("list-docs",),
    ("show", "evil.md"),
    ("keywords", "evil.md"),
    ("query", "reinforcement learning policy"),
    ("query", "reinforcement learning policy", "--format", "markdown"),
    ("query", "reinforcement learning policy", "--explain", "--format", "markdown"),
    ("search", "reinforcement learning", "--format", "markdown"),
]


@pytest.mark.parametrize("args", HUMAN_COMMANDS, ids=lambda a: " ".join(a))
def test_human_output_of_a_document_with_escapes_is_clean_in_process(cli, evil_kb, args):
    res = cli(*args, "--db", evil_kb.db_path)
    assert res.exit_code == 0, res.output
    assert "evil.md" in res.stdout
    assert_clean(res.stdout)


@pytest.mark.parametrize("args", [HUMAN_COMMANDS[1], HUMAN_COMMANDS[4]], ids=lambda a: " ".join(a))
def test_human_output_of_a_document_with_escapes_is_clean_from_the_command(run, evil_kb, args):
    res = run(*args, "--db", evil_kb.db_path)
    assert res.returncode == 0, res.stderr
    assert "Evil title" in res.stdout
    assert_clean(res.stdout)
    assert_clean(res.stderr)


def test_json_output_keeps_the_data_as_it_is(run, evil_kb):
    res = run("show", "evil.md", "--db", evil_kb.db_path, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout                       # escaped by json.dumps ...
    assert res.json()["title"] == f"Evil {EVIL}title"     # ... and unchanged as data


def test_an_error_message_naming_a_path_with_escapes_is_clean(run, evil_kb):
    res = run("show", f"gone{CLEAR}.md", "--db", evil_kb.db_path)
    assert res.returncode == 1
    assert "gone" in res.stderr
    assert_clean(res.stderr)


# -- chat ---------------------------------------------------------------------------------------------------

ANSWER = f"Clear {CLEAR}the screen, set the title {TITLE_OSC}, go red {C1_CSI}and {BIDI}reversed."


@pytest.fixture
def chat_env(tmp_path):
    script = tmp_path / "llm-script.json"
    script.write_text(json.dumps([{"text": ANSWER}]))
    return {"PYTHONPATH": str(REPO), "KBINDEX_FAKE_LLM": str(script), "KBINDEX_LLM_RETRIES": "0",
            "KBINDEX_CHAT_DB": str(tmp_path / "store" / "chat.db"),
            "KBINDEX_CHAT_HISTORY": str(tmp_path / "input-history")}


def test_a_piped_chat_answer_with_escapes_is_clean(run, evil_kb, chat_env):
    res = run("chat", "--llm-backend", "fake", "--db", evil_kb.db_path, input="reinforcement learning\n/history\n",
              env=chat_env)
    assert res.returncode == 0, res.stderr
    assert "Clear the screen, set the title , go red and reversed." in res.stdout
    assert res.stdout.count("Clear the screen") == 2          # the answer, then /history
    assert_clean(res.stdout)
    assert_clean(res.stderr)


def test_a_chat_answer_with_escapes_in_a_terminal_never_reaches_it(evil_kb, chat_env):
    env = {**os.environ, **chat_env}
    with PtySession([*kbindex_exe(), "chat", "--llm-backend", "fake", "--db", str(evil_kb.db_path)], env=env,
                    cwd=evil_kb.db_path.parent) as term:
        term.expect(" │ skills: ")
        term.send(b"reinforcement learning\r")
        term.expect("Clear the screen, set the title , go red and reversed.")
        term.expect(" │ skills: ")
        term.send(b"/history\r")
        term.expect("assistant: Clear the screen")
        term.expect(" │ skills: ")
        term.send(b"\x04")
        assert term.wait() == 0
        raw = term.raw.decode("utf-8", "replace")
    for sequence in (CLEAR, "\x1b]0;pwned", "\x9b", BIDI):
        assert sequence not in raw, f"{sequence!r} reached the terminal"


def test_a_line_break_in_a_file_name_keeps_the_markdown_block_s_shape(small, run):
    handle, kbdir = small
    (kbdir / "nl\nname.md").write_text("# Gliders\n\nGliders soar on thermals.\n", encoding="utf-8")
    assert handle.sync()["errors"] == []
    res = run("query", "gliders thermals", "--format", "markdown", "--db", handle.db_path)
    assert res.returncode == 0, res.stderr
    [line] = [ln for ln in res.stdout.splitlines() if ln.startswith("**Path:**")]
    assert line.startswith("**Path:** nl\\nname.md | **Title:** Gliders")
    out = run("query", "gliders thermals", "--format", "json", "--db", handle.db_path).json()
    assert out["results"][0]["filepath"] == "nl\nname.md"


def test_markdown_paths_are_unambiguous():
    from kb_indexer.search.markdown import _path

    assert _path("nl\nname.md") == "nl\\nname.md" and _path("nl\\nname.md") == "nl\\\\nname.md"
    assert _path("a\u2028b\x85c\rd.md") == "a\\u2028b\\x85c\\rd.md" and _path("plain/doc.md") == "plain/doc.md"
    assert len(_path("x\u2029y\x0bz.md").splitlines()) == 1
