"""``kbindex chat`` for scripts: input read line by line (stdin not a terminal, or ``--format json``).

No prompt, no line editing, no colours. Each non-empty input line is one turn, or a slash command:

* table format: the answer on stdout as plain text (streamed as it arrives, ending with a newline); the
  one-line notes (skills, retrieval, tools, compression, sources) and errors on stderr;
* json format: one JSON object per line of stdout for each turn (:class:`TurnRecord`) or command
  (``{"command", "result", "error"}``).

The exit code is 0, or 1 when a turn or command failed (the following lines are still answered).

``--file PROMPT.md`` and ``--stdin-prompt`` (:func:`run_prompt`): the whole text is one turn, answered as
above, and the chat ends.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, TextIO

from kb_indexer.chat.commands import Outcome, is_command, run_command
from kb_indexer.chat.render import PlainRenderer, run_turn
from kb_indexer.text import terminal_safe


def _json_line(out: TextIO, data: Any) -> None:
    out.write(json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n")   # NaN is not JSON
    out.flush()


def _command(engine: Any, line: str, fmt: str, out: TextIO, err: TextIO) -> Outcome:
    outcome = run_command(engine, line)
    if fmt == "json":
        _json_line(out, outcome.to_dict())
    else:
        if outcome.error:
            err.write(terminal_safe(f"error: {outcome.error.get('message')}\n"))
        if outcome.text:
            out.write(terminal_safe(outcome.text.rstrip("\n") + "\n"))
        out.flush()
    return outcome


def run_lines(engine: Any, lines: Iterable[str], out: TextIO, err: TextIO, fmt: str = "table") -> int:
    """Answer every line of ``lines``; returns the exit code."""
    failed = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        if is_command(line):
            outcome = _command(engine, line, fmt, out, err)
            failed |= outcome.error is not None
            if outcome.exit:
                break
            continue
        renderer = PlainRenderer(out, err) if fmt != "json" else None
        record = run_turn(engine, line, renderer, cancel_on_interrupt=False)
        if fmt == "json":
            _json_line(out, record.to_dict())
        failed |= record.error is not None
    return 1 if failed else 0


def run_prompt(engine: Any, text: str, out: TextIO, err: TextIO, fmt: str = "table") -> int:
    """One turn of the whole ``text`` (``--file PROMPT.md``, ``--stdin-prompt``): never a slash command,
    however it starts; the exit code."""
    if not text.strip():
        err.write("error: the prompt is empty\n")
        return 1
    renderer = PlainRenderer(out, err) if fmt != "json" else None
    record = run_turn(engine, text, renderer, cancel_on_interrupt=False)
    if fmt == "json":
        _json_line(out, record.to_dict())
    return 1 if record.error is not None else 0
