"""Warnings on stderr, the one way every layer writes them.

A warning often carries text kbindex did not write (an LLM server's error message, a path, a name from a
``.env``, an SQLite message): it is made terminal-safe (:func:`kb_indexer.text.terminal_safe`) here, so no
escape sequence reaches the terminal whichever layer warns. The CLI's ``warn`` is this one.
"""

from __future__ import annotations

import sys

from kb_indexer.text import terminal_safe


def warn(message: str) -> None:
    """``warning: <message>`` on stderr, terminal-safe, one line per call."""
    sys.stderr.write(terminal_safe(f"warning: {message}") + "\n")
    sys.stderr.flush()


def note(message: str) -> None:
    """``kbindex: <message>`` on stderr, terminal-safe: news that is not a warning (a server started, stopped)."""
    sys.stderr.write(terminal_safe(f"kbindex: {message}") + "\n")
    sys.stderr.flush()
