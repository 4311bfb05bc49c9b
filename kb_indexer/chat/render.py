"""Rendering one chat turn from the engine's events.

* :class:`TurnRecord` folds a turn's events into the JSON object ``--format json`` prints per turn.
* :class:`PlainRenderer` (piped output): the answer as plain text on stdout as it streams; the one-line notes
  and errors on stderr, so stdout holds nothing but answers.
* :class:`kb_indexer.chat.mdstream.RichRenderer` (a terminal, with ``rich``): the answer as markdown,
  re-rendered as chunks arrive; notes in one dim line each; errors in red on stderr.

An event is anything with ``kind`` and ``data`` (the engine's ``Event``), or a ``{"kind", "data"}`` dict.
A renderer gets every event's text terminal-safe (:func:`displayable`); the record keeps it as it came.
"""

from __future__ import annotations

from typing import Any, TextIO

from kb_indexer import settings
from kb_indexer.api import documented_error
from kb_indexer.chat.usage import usage_line
from kb_indexer.chat.view import INFO_KINDS, citations_line, error_line, event_line
from kb_indexer.text import terminal_safe


def displayable(value: Any) -> Any:
    """``value`` with every string in it made terminal-safe (model answers, titles, paths, tool summaries
    are shown, never interpreted by the terminal)."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {k: displayable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [displayable(v) for v in value]
    return value


def unpack(event: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(event, dict):
        return str(event.get("kind")), dict(event.get("data") or {})
    return str(getattr(event, "kind", "")), dict(getattr(event, "data", None) or {})


class TurnRecord:
    """One turn as a JSON object: ``{input, answer, citations, skills, retrieval, tools, compression, summary,
    attachments, usage, notes, error, session, cancelled}``."""

    def __init__(self, text: str, session: str | None):
        self.input = {"original": text, "normalised": text}
        self.chunks: list[str] = []
        self.done: dict[str, Any] | None = None
        self.skills: dict[str, Any] | None = None
        self.retrieval: dict[str, Any] | None = None
        self.compression: dict[str, Any] | None = None
        self.summary: dict[str, Any] | None = None
        self.attachments: dict[str, Any] | None = None
        self.tools: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.error: dict[str, Any] | None = None
        self.session = session
        self.cancelled = False

    def add(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "input":
            self.input = {"original": data.get("original", self.input["original"]),
                          "normalised": data.get("normalised", self.input["normalised"])}
        elif kind == "text":
            self.chunks.append(str(data.get("text") or ""))
        elif kind == "done":
            self.done = data
            self.session = data.get("session") or self.session
        elif kind in ("skills", "retrieval", "compression", "summary", "attachments"):
            setattr(self, kind, data)
        elif kind == "tool_call":
            self.tools.append({"name": data.get("name"), "arguments": data.get("arguments"), "ok": None,
                               "summary": None})
        elif kind == "tool_result":
            self._tool_result(data)
        elif kind == "note":
            self.notes.append(str(data.get("message") or ""))
        elif kind == "error":
            self.error = {"code": data.get("code") or "error", "message": data.get("message") or ""}

    def _tool_result(self, data: dict[str, Any]) -> None:
        for tool in reversed(self.tools):        # the latest call of that name still without a result
            if tool["name"] == data.get("name") and tool["ok"] is None:
                tool.update(ok=data.get("ok"), summary=data.get("summary"))
                return
        self.tools.append({"name": data.get("name"), "arguments": None, "ok": data.get("ok"),
                           "summary": data.get("summary")})

    @property
    def answer(self) -> str | None:
        if self.done is not None and self.done.get("answer") is not None:
            return str(self.done["answer"])
        return "".join(self.chunks) if self.chunks else None

    def to_dict(self) -> dict[str, Any]:
        done = self.done or {}
        return {"input": self.input, "answer": self.answer, "citations": list(done.get("citations") or []),
                "skills": self.skills, "retrieval": self.retrieval, "tools": self.tools,
                "compression": self.compression, "summary": self.summary, "attachments": self.attachments,
                "usage": done.get("usage"), "notes": self.notes, "error": self.error, "session": self.session,
                "cancelled": self.cancelled}


class PlainRenderer:
    """Plain text for pipes: answer chunks straight to ``out``; notes and errors to ``err``."""

    def __init__(self, out: TextIO, err: TextIO):
        self.out, self.err = out, err
        self.text = ""          # the answer printed so far

    def event(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "text":
            chunk = str(data.get("text") or "")
            self.text += chunk
            self.out.write(chunk)
            self.out.flush()
        elif kind == "done":
            if not self.text and data.get("answer"):
                self.text = str(data["answer"])
                self.out.write(self.text)
            self._end_answer()
            for line in (citations_line(data.get("citations")), usage_line(data.get("usage"))):
                if line:
                    self._note(line)
        elif kind == "error":
            self._end_answer()
            self.err.write(error_line(data) + "\n")
            self.err.flush()
        elif kind in INFO_KINDS:
            line = event_line(kind, data)
            if line:
                self._note(line)

    def _note(self, line: str) -> None:
        self.err.write(line + "\n")
        self.err.flush()

    def _end_answer(self) -> None:
        if self.text and not self.text.endswith("\n"):
            self.out.write("\n")
            self.text += "\n"
        self.out.flush()

    def close(self, cancelled: bool = False) -> None:
        self._end_answer()
        if cancelled:
            self._note("(answer cancelled: what was written is kept in the session, marked cancelled)")


def failure(exc: Exception) -> dict[str, Any]:
    """The error object for an exception out of the engine: its KbError when it maps to one, else an
    internal error (a bug; re-raised instead when KBINDEX_DEBUG is set)."""
    mapped = documented_error(exc)
    if mapped is not None:
        return mapped.to_dict()
    if settings.flag("KBINDEX_DEBUG"):
        raise exc
    return {"code": "internal", "message": f"{type(exc).__name__}: {exc} (a bug in kbindex: rerun with "
            "KBINDEX_DEBUG=1 for the traceback and please report it)"}


def run_turn(engine: Any, text: str, renderer: Any, *, cancel_on_interrupt: bool = True) -> TurnRecord:
    """One turn: the engine's events fed to ``renderer`` (may be None) and folded into the returned record.
    Ctrl-C (KeyboardInterrupt) closes the engine's generator (the engine keeps the partial answer, marked
    cancelled) and, with
    ``cancel_on_interrupt``, returns a record marked cancelled (else it propagates). An exception out of the
    engine becomes the turn's error: the session goes on."""
    record = TurnRecord(text, getattr(engine, "session_id", None))
    gen = None
    cancelled = False
    try:
        gen = engine.turn(text)
        for event in gen:
            kind, data = unpack(event)
            record.add(kind, data)
            if renderer is not None:
                renderer.event(kind, displayable(data))
    except KeyboardInterrupt:
        if not cancel_on_interrupt:
            raise
        cancelled = True
    except Exception as exc:  # noqa: BLE001 - a failing turn must not end the chat
        data = failure(exc)
        record.add("error", data)
        if renderer is not None:
            renderer.event("error", displayable(data))
    finally:
        if gen is not None and hasattr(gen, "close"):
            gen.close()
        if renderer is not None:
            renderer.close(cancelled)
    record.cancelled = cancelled
    return record
