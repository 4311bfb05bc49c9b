"""context add|build|show|reset|sessions|compress: conversation sessions, chat context and compression."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options
from kb_indexer.cli.output import Format, echo, emit, emit_json, warn
from kb_indexer.errors import NotFoundError, UsageError, ValidationError
from kb_indexer.limits import MAX_JSON_FILE_BYTES, parse_json

context_app = typer.Typer(help="Chat context: sessions, rolling summary, normalisation and compression.",
                          no_args_is_help=True)
app.add_typer(context_app, name="context", short_help="Chat context: sessions, summary, compression")

SessionOpt = Annotated[str, typer.Option("--session", "-s", help="The conversation's id (any text you choose).")]
NoLlmOpt = Annotated[bool, typer.Option("--no-llm", help="Never call an LLM: the extractive summary.")]
InputOpt = Annotated[Optional[Path], typer.Option("--input", "-i", help="A JSON file (- for stdin).",
                                                  show_default=False)]


def read_json_input(path: Path) -> Any:
    """The parsed JSON of a file or of stdin (``-``); bad JSON or text is an ``invalid_input`` error."""
    name = "stdin" if str(path) == "-" else str(path)
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"no file {name}") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(raw) > MAX_JSON_FILE_BYTES:
        raise ValidationError(f"{name} is larger than {MAX_JSON_FILE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8-sig")   # a byte-order mark (Windows tools write one) is not content
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{name} is not UTF-8 text (byte {exc.start})") from None
    return parse_json(text, name)


@context_app.command("add", short_help="Record messages of a conversation")
def context_add(
    session: SessionOpt,
    text: Annotated[Optional[str], typer.Argument(help="The message's text.", show_default=False)] = None,
    role: Annotated[Optional[str], typer.Option("--role", "-r", help="user or assistant.")] = None,
    question: Annotated[bool, typer.Option("--question", help="Flag an assistant message as a question "
                                           "(one ending with '?' is one anyway).")] = False,
    input: Annotated[Optional[Path], typer.Option("--input", "-i", help="A JSON list of {role, content} "
                                                  "messages instead (- for stdin).", show_default=False)] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Record messages of a conversation (with timestamps; assistant questions are flagged)."""
    if (input is None) == (text is None):
        raise UsageError("give the message TEXT with --role, or --input FILE with a JSON list (not both)")
    if input is not None and role is not None:
        raise UsageError("--role goes with a TEXT argument; in --input each message has its own role")
    messages = None
    if input is not None:
        messages = read_json_input(input)
        if isinstance(messages, dict) and "messages" in messages:
            messages = messages["messages"]
    elif role is None:
        raise UsageError("--role user|assistant is required with a TEXT argument")
    with open_kb(db, kb) as k:
        data = k.context.add(session, messages, role=role, text=text, is_question=question)
    emit(data, format, rows="added", columns=("seq", "role", "is_question", "normalised"))


@context_app.command("build", short_help="The chat context for a message, as a prompt block")
def context_build(
    session: SessionOpt,
    message: Annotated[str, typer.Argument(help="The current user message.")],
    recent: Annotated[int, typer.Option("--recent", "-n", help="How many recent user messages to include.")] = 8,
    max_chars: Annotated[int, typer.Option("--max-chars", help="Cap on the context block; the oldest recent "
                                           "messages go first.")] = 6000,
    summary_after: Annotated[int, typer.Option("--summary-after", help="Keep a rolling summary once the session "
                                               "has more than this many messages.")] = 12,
    record: Annotated[bool, typer.Option("--record", help="Then add MESSAGE to the session as the user's.")] = False,
    no_llm: NoLlmOpt = False,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """The chat context for MESSAGE: summary, recent user messages, last assistant question, the normalised
    message, and the prompt block that holds them."""
    opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
    with open_kb(db, kb) as k:
        data = k.context.build(session, message, recent=recent, max_chars=max_chars, summary_after=summary_after,
                               use_llm=not no_llm, llm=opts, record=record)
    refresh = data["stats"]["summary_refresh"]
    if refresh.get("fallback") and "no LLM backend configured" not in refresh["fallback"] and not no_llm:
        warn(f"rolling summary: {refresh['fallback']}")
    if format is Format.json:
        emit_json(data)
        return
    echo(data["prompt"] + "\n")


@context_app.command("show")
def context_show(session: SessionOpt, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """A session's messages and rolling summary."""
    with open_kb(db, kb) as k:
        data = k.context.show(session)
    if format is Format.table and data["summary"]:
        echo(f"Summary ({data['summary']['source']}): {data['summary']['text']}\n")
    emit(data, format, rows="messages", columns=("seq", "role", "is_question", "created_at", "content"))


@context_app.command("reset")
def context_reset(session: SessionOpt, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Forget a session's messages and summary."""
    with open_kb(db, kb) as k:
        emit(k.context.reset(session), format, title="context reset")


@context_app.command("sessions")
def context_sessions(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """The conversation sessions, most recently used first."""
    with open_kb(db, kb) as k:
        emit(k.context.sessions(), format, rows="sessions",
             columns=("session", "messages", "user_messages", "has_summary", "updated_at"))


@context_app.command("compress", short_help="Compress messages and skills to fit a window")
def context_compress(
    window: Annotated[Optional[int], typer.Option("--window", "-w", help="The model's context window in tokens "
                                                  "(env KBINDEX_CONTEXT_WINDOW; default per backend).",
                                                  show_default=False)] = None,
    input: InputOpt = None,
    session: Annotated[Optional[str], typer.Option("--session", "-s", help="Compress this session's messages "
                                                   "(and its loaded skills).", show_default=False)] = None,
    keep_last: Annotated[int, typer.Option("--keep-last", help="Messages kept verbatim at the end.")] = 4,
    no_llm: NoLlmOpt = False,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.json,
) -> None:
    """Compress {messages, skills} at 80/90/95% of the window: summarise older history, drop relevant
    skills, compress skills; prints the same shape with stats (JSON)."""
    if input is None and session is None:
        raise UsageError("give --input FILE (- for stdin) with {\"messages\": [...], \"skills\": [...]}, "
                         "or --session ID")
    payload = read_json_input(input) if input is not None else None
    if isinstance(payload, list):
        payload = {"messages": payload}
    opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
    with open_kb(db, kb) as k:
        data = k.context.compress(payload, session=session, window=window, keep_last=keep_last,
                                  use_llm=not no_llm, llm=opts)
    stats = data["stats"]
    if stats["fallback"] and not no_llm and "no LLM backend configured" not in stats["fallback"]:
        warn(f"context compress: {stats['fallback']}")
    if stats["over_window"]:
        warn(f"context compress: still {stats['tokens_after']} tokens for a window of {stats['window']}")
    elif stats["cut_messages"] or stats["cut_skills"]:
        warn(f"context compress: {len(stats['cut_messages'])} message(s) and {len(stats['cut_skills'])} skill(s) "
             f"cut to fit the window of {stats['window']} (stats.cut_messages, stats.cut_skills)")
    if format is Format.json:
        emit_json(data)
        return
    emit({k: v for k, v in stats.items() if k not in ("stages", "token_counts")}, format, title="context compress")
