"""The interactive ``kbindex chat``: a prompt_toolkit prompt over the chat engine, whose events it only renders.

* The prompt is exactly ``engine.prompt`` (``kbindex[<kb-name>]> `` or ``kbindex> ``); a bottom toolbar shows
  the model, the context's use of the model's window and the loaded skills.
* Line editing and input history kept across runs in :func:`history_path` (Up/Down, Ctrl-R), suggestions
  from it (Right accepts), Tab completes slash commands and ``@path`` mentions, Alt-Enter inserts a new line.
* Answers stream as markdown (:mod:`kb_indexer.chat.mdstream`); skills, retrieval, tool calls and
  compression in one dim line each; errors in red on stderr, and the chat goes on.
* Ctrl-C during an answer cancels it (what was written is kept in the session, marked cancelled) and returns to the prompt; at the prompt it
  clears the line; Ctrl-D (on an empty line) or ``/exit`` leaves.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from rich.console import Console
from rich.text import Text

from kb_indexer import settings
from kb_indexer.chat.commands import NAMES, Outcome, is_command, run_command
from kb_indexer.chat.mdstream import RichRenderer
from kb_indexer.chat.mentions import complete
from kb_indexer.chat.render import failure, run_turn
from kb_indexer.chat.source import data_dir, private_file
from kb_indexer.chat.view import source_dict, toolbar_text
from kb_indexer.text import terminal_safe


MAX_COMPLETIONS = 50


def history_path() -> Path:
    """Where the input history lives: ``KBINDEX_CHAT_HISTORY``, else ``$XDG_DATA_HOME/kbindex/chat_history``
    (``~/.local/share/kbindex/chat_history``)."""
    env = settings.text("KBINDEX_CHAT_HISTORY")
    if env:
        return Path(env).expanduser()
    return data_dir() / "chat_history"


def open_history(path: Path) -> tuple[History, str | None]:
    """A file history at ``path`` (a private file: :func:`kb_indexer.chat.source.private_file`), or an
    in-memory one with a warning when the file cannot be written."""
    try:
        private_file(path)
        with open(path, "a", encoding="utf-8"):
            pass
        return FileHistory(str(path)), None
    except OSError as exc:
        return InMemoryHistory(), f"input history not kept: cannot write {path} ({exc.strerror or exc})"


class SlashCompleter(Completer):
    """Completes the command name of a line starting with ``/``, and an ``@path`` word with the paths of
    the knowledge base's documents (``paths``: called once, at the first ``@`` completion)."""

    def __init__(self, paths: Callable[[], list[str]] | None = None):
        self._paths_of = paths
        self._paths: list[str] | None = None

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name in NAMES:
                if name.startswith(text.lower()):
                    yield Completion(name, start_position=-len(text))
            return
        word = text.rsplit(None, 1)[-1] if text.strip() and not text[-1].isspace() else ""
        if word.startswith("@") and self._paths_of is not None:
            if self._paths is None:
                try:
                    self._paths = list(self._paths_of())
                except Exception:  # noqa: BLE001 - no completion rather than a broken prompt
                    self._paths = []
            for path in complete(self._paths, word[1:])[:MAX_COMPLETIONS]:
                yield Completion("@" + path, start_position=-len(word))


@contextlib.contextmanager
def keys_not_echoed(stream: Any = None) -> Iterator[None]:
    """While an answer is written, keys typed (and the ``^C`` of Ctrl-C) are not echoed into it by the
    terminal; they still reach the next prompt. Nothing changes when the stream is not a terminal."""
    try:
        import termios  # lazy: termios is POSIX only (not on Windows)

        fd = (stream or sys.stdin).fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError, AttributeError):   # not a terminal, or no termios (Windows)
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | getattr(termios, "ECHOCTL", 0))
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        yield
    finally:
        with contextlib.suppress(OSError):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def _key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return kb


class Terminal:
    """One interactive chat over ``engine``; ``input``/``output`` (prompt_toolkit) and the rich consoles can be
    given for tests."""

    def __init__(self, engine: Any, *, console: Any = None, err_console: Any = None,
                 history: History | None = None, input: Any = None, output: Any = None):
        self.engine = engine
        self.console = console or Console()
        self.err_console = err_console or Console(stderr=True)
        self.status: dict[str, Any] = {}
        warning = None
        if history is None:
            history, warning = open_history(history_path())
        self.prompt_session: PromptSession[str] = PromptSession(
            history=history, auto_suggest=AutoSuggestFromHistory(), completer=SlashCompleter(getattr(engine, "document_paths", None)),
            complete_while_typing=False, bottom_toolbar=self.toolbar, key_bindings=_key_bindings(),
            enable_history_search=False, input=input, output=output)
        if warning:
            self.dim(f"warning: {warning}")

    # -- output ----------------------------------------------------------------------------------------
    def dim(self, line: str) -> None:
        self.console.print(Text(terminal_safe(line), style="dim"))

    def error(self, line: str) -> None:
        self.err_console.print(Text(terminal_safe(line), style="red"))

    def toolbar(self) -> str:
        return toolbar_text(self.status)

    def refresh_status(self) -> None:
        try:
            self.status = dict(self.engine.status())
        except Exception:  # noqa: BLE001 - the toolbar keeps its last figures
            pass

    def banner(self) -> None:
        src = source_dict(self.engine)
        where = (f"knowledge base {src.get('name')}" if src.get("mode") == "kb"
                 else "free mode (no knowledge base)")
        self.dim(f"kbindex chat · {where} · {getattr(self.engine, 'model_label', '?')} · "
                 f"session {self.engine.session_id}")
        self.dim("/help for commands · Ctrl-C cancels an answer · Ctrl-D leaves")

    def show(self, outcome: Outcome) -> None:
        if outcome.error:
            self.error(f"error: {outcome.error.get('message')}")
        if outcome.text:
            self.console.print(Text(terminal_safe(outcome.text)))

    # -- the loop --------------------------------------------------------------------------------------
    def read(self) -> str | None:
        """The next input; None at Ctrl-D. Ctrl-C at the prompt gives a fresh, empty prompt."""
        while True:
            self.refresh_status()
            try:
                return self.prompt_session.prompt(self.engine.prompt)
            except KeyboardInterrupt:
                continue
            except EOFError:
                return None

    def handle(self, text: str) -> bool:
        """Answer one input; False when the chat is to end."""
        if is_command(text):
            try:
                outcome = run_command(self.engine, text)
            except Exception as exc:  # noqa: BLE001 - a failing command must not end the chat
                outcome = Outcome(text.split()[0], error=failure(exc))
            self.show(outcome)
            return not outcome.exit
        with keys_not_echoed():
            run_turn(self.engine, text, RichRenderer(self.console, self.err_console))
        self.console.print()        # a blank line between the answer and the next prompt
        return True

    def run(self) -> int:
        self.banner()
        while True:
            text = self.read()
            if text is None:
                return 0
            try:
                if text.strip() and not self.handle(text.strip()):
                    return 0
            except KeyboardInterrupt:      # during a slash command: back to the prompt
                self.dim("^C")


def run_interactive(engine: Any) -> int:
    return Terminal(engine).run()
