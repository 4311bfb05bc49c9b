"""Chat's toolbar and `/context` give the one figure for the context's use of the window (the toolbar said 50% while
`/context` said 30%: one counted the last prompt with its retrieved documents, the other the next turn before
them), and a turn's status lines are read whole: a reason is not cut at 100 characters nor at the screen's edge."""

from __future__ import annotations

import io
import re

from rich.console import Console

from kb_indexer.chat.commands import run_command
from kb_indexer.chat.mdstream import RichRenderer
from kb_indexer.chat.view import event_line, toolbar_text
from tests.chat.test_chat_engine import chat_store, kbchat  # noqa: F401  (the fixtures)

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
REASON = ("the model's answer not used: invalid JSON: Expecting property name enclosed in double quotes at line 1 "
          "column 2 (char 1); keyword result")


def test_the_toolbar_and_context_show_the_same_share_of_the_window(kbchat):  # noqa: F811
    eng, _ = kbchat("AlphaGo combines Monte Carlo tree search with neural networks. " * 20)
    list(eng.turn("how does alphago use monte carlo tree search"))   # retrieves documents into the prompt
    status = eng.status()
    shown = re.search(r"context (\d+)%", toolbar_text(status)).group(1)
    text = run_command(eng, "/context").text
    assert f"({shown}%)" in text
    nxt = eng.estimate_next()
    assert nxt != status["context_tokens"]          # the next turn starts smaller: both are said, one percent
    assert f"the next turn starts from about {nxt:,} tokens" in text
    assert len(re.findall(r"\(\d+%\)", text)) == 1


def test_a_reason_in_a_status_line_is_whole():
    line = event_line("skills", {"loaded": ["kbindex-search"], "fallback": REASON})
    assert REASON in line and "…" not in line
    assert REASON in event_line("summary", {"source": "extractive", "folded_messages": 2, "fallback": REASON})
    assert REASON in event_line("compression", {"level": 90, "fallback": REASON})
    assert REASON in event_line("attachments", {"refused": [{"path": "a.md", "reason": REASON}]})


def test_a_status_line_wider_than_the_screen_wraps_instead_of_being_cut():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=60, height=25, color_system="standard")
    renderer = RichRenderer(console, Console(file=io.StringIO()), spinner=False)
    renderer.event("skills", {"loaded": ["kbindex-search"], "newly_loaded": ["kbindex-search"], "fallback": REASON})
    text = ANSI.sub("", buf.getvalue())
    assert "…" not in text
    assert " ".join(text.split()).endswith(" ".join(REASON.split()) + ")")
