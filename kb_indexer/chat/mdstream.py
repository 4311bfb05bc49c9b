"""The terminal's renderer (:class:`RichRenderer`) and its streamed markdown (:class:`MarkdownStream`): the
answer is re-rendered with ``rich`` as chunks arrive; notes in one dim line each; errors in red on stderr.

A ``rich.live.Live`` region can only redraw what fits on the screen, so an answer taller than the terminal
would be cut or duplicated. As in aider's streaming renderer, only the last lines of the rendered markdown
live in the ``Live`` region; lines above it are printed once, for good, into the scrollback. (A line that is
already printed is not redrawn when later text changes how markdown renders it; with a window of many lines
that is rare: a table or a setext heading growing above it.)
"""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.status import Status
from rich.text import Text

from kb_indexer.chat.usage import usage_line
from kb_indexer.chat.view import INFO_KINDS, citations_line, error_line, event_line

MIN_INTERVAL = 0.08   # seconds between two re-renders of the markdown


class MarkdownStream:
    def __init__(self, console: Console, *, min_interval: float = MIN_INTERVAL):
        self.console = console
        self.text = ""
        self.printed = 0            # rendered lines already printed above the live region
        self.min_interval = min_interval
        self._live: Live | None = None
        self._last = 0.0

    @property
    def window(self) -> int:
        """Lines kept in the live region: the screen minus room for the prompt and the toolbar."""
        return max(4, self.console.size.height - 4)

    def _lines(self) -> list[list[Segment]]:
        return self.console.render_lines(Markdown(self.text), self.console.options.update(height=None),
                                         pad=False, new_lines=False)

    @staticmethod
    def _renderable(lines: list[list[Segment]], end: bool = False) -> Segments:
        """The lines as one renderable; ``end`` adds the last newline (printing Segments adds none)."""
        flat: list[Segment] = []
        for i, line in enumerate(lines):
            if i:
                flat.append(Segment.line())
            flat.extend(line)
        if end and lines:
            flat.append(Segment.line())
        return Segments(flat)

    def add(self, chunk: str) -> None:
        self.text += chunk
        now = time.monotonic()
        if self._live is not None and now - self._last < self.min_interval:
            return
        self._last = now
        self._update()

    def _update(self) -> None:
        lines = self._lines()
        stable = max(self.printed, len(lines) - self.window)
        live = self._live
        if live is None:
            live = self._live = Live(console=self.console, auto_refresh=False, transient=False,
                                     vertical_overflow="visible")
            live.start()
        if stable > self.printed:
            # printed above the live region (Live moves itself down)
            self.console.print(self._renderable(lines[self.printed:stable], end=True))
            self.printed = stable
        live.update(self._renderable(lines[self.printed:]), refresh=True)

    def close(self) -> None:
        """Render the whole text one last time and leave the live region (safe to call twice)."""
        if self._live is None and not self.text.strip():
            return
        try:
            self._update()
        finally:
            live, self._live = self._live, None
            if live is not None:
                live.stop()


class RichRenderer:
    """A terminal: markdown re-rendered as it streams, notes dimmed, errors red on ``err_console``; a spinner
    while the model has not started answering (and again after a tool call)."""

    def __init__(self, console: Console, err_console: Console, *, spinner: bool = True):
        self.console, self.err_console = console, err_console
        self.stream: MarkdownStream | None = None  # the MarkdownStream of the answer segment being written
        self.answered = False
        self.spinner = spinner
        self.waiting: Status | None = None  # the rich Status shown while waiting
        self._wait()

    def _wait(self) -> None:
        if self.spinner and self.waiting is None and self.stream is None:
            waiting = self.waiting = self.console.status("thinking…", spinner="dots", spinner_style="dim")
            waiting.start()

    def _stop_waiting(self) -> None:
        waiting, self.waiting = self.waiting, None
        if waiting is not None:
            waiting.stop()

    def event(self, kind: str, data: dict[str, Any]) -> None:
        if kind in ("text", "done", "error"):
            self._stop_waiting()
        if kind == "text":
            chunk = str(data.get("text") or "")
            if chunk:
                self._segment().add(chunk)
                self.answered = True
        elif kind == "done":
            if not self.answered and data.get("answer"):
                self._segment().add(str(data["answer"]))
                self.answered = True
            self._end_segment()
            for line in (citations_line(data.get("citations")), usage_line(data.get("usage"))):
                if line:
                    self.dim(line)
        elif kind == "error":
            self._end_segment()
            self.error(error_line(data))
        elif kind in INFO_KINDS:
            line = event_line(kind, data)
            if line:
                self._end_segment()
                self.dim(line)
            if kind == "tool_result":
                self._wait()            # the model is asked again

    def _segment(self) -> MarkdownStream:
        if self.stream is None:
            self.stream = MarkdownStream(self.console)
        return self.stream

    def _end_segment(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            stream.close()

    def dim(self, line: str) -> None:
        """A dim line above the spinner, wrapped at the screen's edge: a status line is read whole (a reason cut
        at the edge was the part that mattered)."""
        self.console.print(Text(line, style="dim"))

    def error(self, line: str) -> None:
        self.err_console.print(Text(line, style="red"))

    def close(self, cancelled: bool = False) -> None:
        self._stop_waiting()
        self._end_segment()
        if cancelled:
            self.dim("^C answer cancelled (kept in the session, marked cancelled)")
