"""Streamed markdown in a terminal: the answer is re-rendered with ``rich`` as chunks arrive.

A ``rich.live.Live`` region can only redraw what fits on the screen, so an answer taller than the terminal
would be cut or duplicated. As in aider's streaming renderer, only the last lines of the rendered markdown
live in the ``Live`` region; lines above it are printed once, for good, into the scrollback. (A line that is
already printed is not redrawn when later text changes how markdown renders it; with a window of many lines
that is rare: a table or a setext heading growing above it.)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported when an answer is shown
    from rich.console import Console
    from rich.live import Live
    from rich.segment import Segment, Segments

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
        from rich.markdown import Markdown

        return self.console.render_lines(Markdown(self.text), self.console.options.update(height=None),
                                         pad=False, new_lines=False)

    @staticmethod
    def _renderable(lines: list[list[Segment]], end: bool = False) -> Segments:
        """The lines as one renderable; ``end`` adds the last newline (printing Segments adds none)."""
        from rich.segment import Segment, Segments

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
        from rich.live import Live

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
