"""chat: talk with an LLM over the knowledge base (or, in free mode, without one)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, app
from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, llm_options
from kb_indexer.cli.output import Format, echo, emit
from kb_indexer.errors import NotFoundError, UsageError, ValidationError

if TYPE_CHECKING:
    from kb_indexer.chat.engine import ChatEngine

_SESSION_COLUMNS = ("session", "messages", "user_messages", "updated_at", "created_at", "title", "first_message")


def _engine() -> type[ChatEngine]:
    from kb_indexer.chat.engine import ChatEngine  # lazy: the chat engine (the API, the LLM client) not for --help
    return ChatEngine


def _list(db: str | None, free: bool, format: Format) -> None:
    data = _engine().list_sessions(db, free=free)
    sessions = data.get("sessions") or []
    columns = [c for c in _SESSION_COLUMNS if any(c in s for s in sessions)] or ["session"]
    emit(data, format, rows="sessions", columns=columns)


def _interactive(format: Format) -> bool:
    """Whether to run the prompt_toolkit front end: a person at a terminal (stdin and stdout), table format."""
    return format is Format.table and sys.stdin.isatty() and sys.stdout.isatty()


def _one_prompt(file: Path | None, stdin_prompt: bool) -> str | None:
    """The text of ``--file`` or ``--stdin-prompt`` (one turn), or None for a conversation."""
    if file is not None and stdin_prompt:
        raise UsageError("--file and --stdin-prompt exclude each other")
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:   # as every command: a file that does not exist is not_found (exit 1)
            raise NotFoundError(f"no prompt file {file}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError(f"cannot read the prompt file {file}: {getattr(exc, 'strerror', None) or exc}") from None
    elif stdin_prompt:
        text = sys.stdin.read()
    else:
        return None
    if not text.strip():
        raise UsageError("the prompt is empty" + (f" ({file})" if file is not None else " (stdin)"))
    return text


@app.command("chat", short_help="Chat with an LLM over the knowledge base")
def chat(
    db: DbOpt = None,
    free: Annotated[bool, typer.Option("--free", help="No knowledge base: conversation and skills only "
                                       "(also the mode when no index is found).")] = False,
    resume: Annotated[Optional[str], typer.Option("--resume", help="Continue a saved session (ids: --list).",
                                                  show_default=False)] = None,
    list_sessions: Annotated[bool, typer.Option("--list", help="List the saved sessions and exit.")] = False,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, llm_timeout: LlmTimeoutOpt = None,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Print each answer whole, not as it is "
                                            "written.")] = False,
    window: Annotated[Optional[int], typer.Option("--window", "-w", help="The model's context window in tokens "
                                                  "(env KBINDEX_CONTEXT_WINDOW; default per backend).",
                                                  show_default=False)] = None,
    file: Annotated[Optional[Path], typer.Option("--file", "-f", help="Send the whole file as one prompt "
                                                 "(one turn, then exit).", show_default=False)] = None,
    stdin_prompt: Annotated[bool, typer.Option("--stdin-prompt", help="Send the whole of stdin as one prompt "
                                               "(one turn, then exit).")] = False,
    format: FormatOpt = Format.table,
) -> None:
    """Chat with an LLM over the knowledge base: retrieval and tools, skills, context compression, saved
    sessions. At a terminal: line editing, history, slash commands (/help), @path attaches a document. Piped:
    one answer per input line (--format json: one JSON object per turn); --file/--stdin-prompt: one turn."""
    if db is not None and free:
        raise UsageError("--db and --free exclude each other: free mode has no knowledge base")
    if list_sessions:
        if resume is not None:
            raise UsageError("--list and --resume exclude each other")
        _list(db, free, format)
        return
    prompt = _one_prompt(file, stdin_prompt)
    opts = llm_options(llm_backend, llm_model, False, llm_timeout)
    engine = _engine().open(db, free=free, resume=resume, llm=opts, stream=not no_stream, window=window)
    try:
        if engine.note:
            echo(f"note: {engine.note}\n", err=True)
        engine.check_llm()
        if prompt is None and _interactive(format):
            from kb_indexer.chat.terminal import run_interactive  # lazy: prompt_toolkit and rich, only at a terminal

            code = run_interactive(engine)
        else:
            from kb_indexer.chat.piped import run_lines, run_prompt  # lazy: the chat modules not for --help

            code = (run_prompt(engine, prompt, sys.stdout, sys.stderr, format.value) if prompt is not None
                    else run_lines(engine, sys.stdin, sys.stdout, sys.stderr, format.value))
    finally:
        engine.close()
    if code:
        raise typer.Exit(code)
