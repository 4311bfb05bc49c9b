"""The slash commands of ``kbindex chat``: parsed and run here against the engine, answered as an
:class:`Outcome` holding both the data (for ``--format json``) and the text (for people). Only ``/compact`` may call
the LLM (for the summary); an unknown one answers with the help.

A line is a command when its first word is ``/`` followed by letters (``/skills``, ``/resume abc``); a line
such as ``/etc/hosts is missing`` is a message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from kb_indexer.chat.view import context_percent, source_dict
from kb_indexer.errors import KbError, UsageError

if TYPE_CHECKING:
    from kb_indexer.chat.engine import ChatEngine

_COMMAND = re.compile(r"^/([A-Za-z?][A-Za-z-]*)(?:\s+(.*))?$", re.DOTALL)


@dataclass
class Outcome:
    command: str
    data: Any = None
    text: str = ""
    exit: bool = False
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "result": self.data, "error": self.error}


def is_command(line: str) -> bool:
    return bool(_COMMAND.match(line.strip()))


# -- the commands -------------------------------------------------------------------------------------------

def _help(engine: ChatEngine, args: list[str]) -> Outcome:
    rows = [{"command": usage, "help": text} for usage, text, _ in _TABLE.values()]
    width = max(len(r["command"]) for r in rows)
    lines = [f"  {r['command']:<{width}}  {r['help']}" for r in rows]
    text = "Commands:\n" + "\n".join(lines) + "\n\n" + KEYS
    return Outcome("help", {"commands": rows}, text)


KEYS = ("Keys: Enter sends; Alt-Enter (or Esc then Enter) starts a new line; Up/Down browse earlier input;\n"
        "Tab completes a command or an @path (a knowledge-base document attached to the message);\nCtrl-C cancels the answer in flight (at the prompt, clears the line);\n"
        "Ctrl-D leaves.")


def _exit(engine: ChatEngine, args: list[str]) -> Outcome:
    return Outcome("exit", {"exit": True}, "", exit=True)


def _clear(engine: ChatEngine, args: list[str]) -> Outcome:
    session = engine.clear()
    return Outcome("clear", {"session": session}, f"new session {session}: the context is empty")


def _skills(engine: ChatEngine, args: list[str]) -> Outcome:
    state = engine.skills_state()
    loaded = list(state.get("loaded") or [])
    lines = [f"loaded: {', '.join(loaded) if loaded else 'none'}"]
    for s in state.get("skills") or []:
        mark = "*" if s.get("loaded") else " "
        lines.append(f" {mark} {s.get('name')}  priority {s.get('priority') or '-'}, matched "
                     f"{s.get('match_count', 0)} time(s)")
    if not state.get("skills"):
        lines.append("no skill matched in this session yet (`kbindex skills sync DIR` indexes skills)")
    return Outcome("skills", state, "\n".join(lines))


def _history(engine: ChatEngine, args: list[str]) -> Outcome:
    messages = engine.history()
    if not messages:
        return Outcome("history", {"messages": []}, "no messages in this session yet")
    lines = []
    for m in messages:
        content = str(m.get("content") or "").rstrip().replace("\n", "\n    ")
        lines.append(f"[{m.get('seq')}] {m.get('role')}: {content}")
    return Outcome("history", {"messages": messages}, "\n".join(lines))


def _source(engine: ChatEngine, args: list[str]) -> Outcome:
    src = source_dict(engine)
    if src.get("mode") == "kb":
        text = (f"knowledge base {src.get('name')}: index {src.get('db')}"
                + (f", files in {src['kb_root']}" if src.get("kb_root") else ""))
    else:
        text = (f"free mode (no knowledge base; conversation and skills only), state in {src.get('db')}; "
                "start `kbindex chat --db PATH` to chat over an index")
    return Outcome("source", src, text)


def _context(engine: ChatEngine, args: list[str]) -> Outcome:
    ctx = engine.context_preview()
    recent = ctx.get("recent_user_messages") or []
    lines = [f"summary: {ctx.get('summary') or '(none)'}", "recent user messages:"]
    lines += [f"  {i}) {m}" for i, m in enumerate(recent, 1)] or ["  (none)"]
    if ctx.get("last_assistant_question"):
        lines.append(f"last assistant question: {ctx['last_assistant_question']}")
    lines += _context_use(ctx)
    return Outcome("context", ctx, "\n".join(lines))


def _context_use(ctx: dict[str, Any]) -> list[str]:
    """The context's use of the window, the toolbar's figure (:func:`kb_indexer.chat.view.context_percent`), and
    what the next turn starts from when that differs (the last prompt held its retrieved documents too)."""
    nxt, window = ctx.get("tokens"), ctx.get("window")
    used = ctx.get("context_tokens", nxt)
    pct = context_percent({"context_tokens": used, "window": window, "context_pct": ctx.get("pct")})
    if not isinstance(used, int):
        return []
    share = f" ({pct:.0f}%)" if pct is not None else ""
    of = f" of a {window:,}-token window" if isinstance(window, int) else ""
    if not isinstance(nxt, int) or nxt == used:
        return [f"about {used:,} tokens{of}{share}"]
    return [f"the last prompt: about {used:,} tokens{of}{share}, with its message and retrieved documents",
            f"the next turn starts from about {nxt:,} tokens, before its message and retrieval"]


def _feedback(helpful: bool) -> Callable[[ChatEngine, list[str]], Outcome]:
    name = "helpful" if helpful else "unhelpful"

    def run(engine: ChatEngine, args: list[str]) -> Outcome:
        if not args:
            raise UsageError(f"/{name} needs the FILE(s) of the last answer's retrieval, e.g. /{name} notes/a.md")
        result = engine.feedback(args if helpful else [], [] if helpful else args)
        text = f"marked {'helpful' if helpful else 'not helpful'}: {', '.join(args)}"
        if isinstance(result, dict) and result.get("query_id") is not None:
            text += f" (query {result['query_id']}; `kbindex learn` applies it)"
        if isinstance(result, dict) and result.get("not_in_results"):
            text += ("; not among that retrieval's results (recorded against it all the same): "
                     + ", ".join(result["not_in_results"]))
        return Outcome(name, result, text)

    return run


def _resume(engine: ChatEngine, args: list[str]) -> Outcome:
    if not args:
        src = source_dict(engine)
        listing = engine.list_sessions(src.get("db") if src.get("mode") == "kb" else None,
                                       free=src.get("mode") == "free")
        return Outcome("resume", listing, sessions_text(listing.get("sessions") or []) +
                       "\n/resume ID continues one")
    result = engine.resume(args[0])
    count = result.get("messages") if isinstance(result, dict) else None
    count = len(count) if isinstance(count, list) else count
    text = f"resumed session {engine.session_id}" + (f" ({count} messages)" if count is not None else "")
    return Outcome("resume", result, text)


def _compact(engine: ChatEngine, args: list[str]) -> Outcome:
    out = engine.compact()
    if not out.get("compacted"):
        return Outcome("compact", out, out.get("reason") or "nothing to compact")
    text = (f"compacted {out.get('folded_messages')} message(s) into the {out.get('source')} summary: about "
            f"{out.get('tokens_before'):,} → {out.get('tokens_after'):,} tokens")
    if out.get("fallback"):
        text += f" ({out['fallback']})"
    return Outcome("compact", out, text)


def _export(engine: ChatEngine, args: list[str]) -> Outcome:
    out = engine.export(args)
    return Outcome("export", out, f"exported {out['messages']} message(s) as {out['format']} to {out['path']}")


def sessions_text(sessions: list[dict[str, Any]]) -> str:
    if not sessions:
        return "no saved sessions"
    lines = ["saved sessions, most recent first:"]
    for s in sessions:
        extra = f", {s['updated_at']}" if s.get("updated_at") else ""
        preview = f"  {s['first_message']}" if s.get("first_message") else ""
        lines.append(f"  {s.get('session')}  {s.get('messages', '?')} messages{extra}{preview}")
    return "\n".join(lines)


Handler = Callable[["ChatEngine", list[str]], Outcome]
_TABLE: dict[str, tuple[str, str, Handler]] = {
    "help": ("/help", "this help", _help),
    "exit": ("/exit", "leave (also Ctrl-D)", _exit),
    "clear": ("/clear", "start a new, empty session (the old one stays saved)", _clear),
    "skills": ("/skills", "the session's skills: loaded, priority, matches", _skills),
    "history": ("/history", "this session's messages", _history),
    "source": ("/source", "the knowledge base in use, or free mode", _source),
    "context": ("/context", "what the next turn sends: summary, recent messages, token estimate", _context),
    "helpful": ("/helpful FILE...", "mark documents of the last retrieval helpful (feeds `kbindex learn`)",
                _feedback(True)),
    "unhelpful": ("/unhelpful FILE...", "mark documents of the last retrieval not helpful", _feedback(False)),
    "resume": ("/resume [ID]", "continue a saved session (without ID: list them)", _resume),
    "compact": ("/compact", "fold every turn but the last into the summary now (the model's, else extractive)",
                _compact),
    "export": ("/export [md|json] [PATH]", "write this session to a file (default: exports/<session>.md in the chat's folder)", _export),
}
_ALIASES = {"quit": "exit", "q": "exit", "?": "help", "h": "help"}
NAMES = tuple(f"/{n}" for n in _TABLE)


def run_command(engine: ChatEngine, line: str) -> Outcome:
    """Run one slash command. A KbError (bad usage, free mode, unknown session...) becomes the outcome's
    ``error`` (no text); an unknown command is an error too, with the help as its text."""
    m = _COMMAND.match(line.strip())
    name = (m.group(1) if m else "").lower()
    args = (m.group(2) or "").split() if m else []
    name = _ALIASES.get(name, name)
    if name not in _TABLE:
        out = _help(engine, [])
        out.error = {"code": "usage", "message": f"unknown command /{name} (nothing was sent to the model)"}
        return out
    try:
        return _TABLE[name][2](engine, args)
    except KbError as exc:
        return Outcome(name, None, "", error=exc.to_dict())
