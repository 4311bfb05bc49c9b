"""Plain-text views of chat engine events and state: the one-line notes shown (dimmed) during a turn, the
bottom toolbar, and the text of the slash commands. No terminal code here: the terminal and the piped front
ends both print these strings (with or without style).

Every function takes the engine's plain dicts and is defensive about missing keys: the view must never be
the thing that breaks a chat.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from kb_indexer.chat.usage import context_share

#: Event kinds shown as one dim line each.
INFO_KINDS = ("input", "note", "skills", "attachments", "retrieval", "summary", "compression", "tool_call",
              "tool_result")
MAX_PATHS = 4        # paths named in a retrieval line
MAX_ARGS_CHARS = 80  # characters of tool-call arguments shown
#: Characters of a reason shown (why the model's choice, the LLM summary or an attachment was not used): enough for
#: any of kbindex's own, a bound on a server's error page. A reason is the point of its line, so it is not cut short.
MAX_REASON_CHARS = 400


def _names(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value]


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _input_line(d: dict[str, Any]) -> str | None:
    original, normalised = d.get("original"), d.get("normalised")
    if normalised and original and " ".join(normalised.split()) != " ".join(original.split()):
        return f"read as: {_short(normalised, 120)}"
    return None


def _skills_line(d: dict[str, Any]) -> str | None:
    loaded, new, gone = _names(d.get("loaded")), _names(d.get("newly_loaded")), _names(d.get("evicted"))
    if not (loaded or gone):
        return None
    parts = [f"skills: {', '.join(loaded) if loaded else 'none'}"]
    if new:
        parts.append(f"+{', +'.join(new)}")
    if gone:
        parts.append(f"-{', -'.join(gone)} evicted")
    if d.get("fallback"):
        parts.append(f"(keyword match: {_short(d['fallback'], MAX_REASON_CHARS)})")
    elif d.get("method") == "llm":
        parts.append("(chosen by the model)")
    return "  ".join(parts)


def _attachments_line(d: dict[str, Any]) -> str | None:
    parts = []
    if d.get("attached"):
        parts.append(f"attached: {', '.join(_names(d['attached']))}")
    for r in d.get("refused") or []:
        if isinstance(r, dict):
            parts.append(f"not attached: @{r.get('path')} ({_short(str(r.get('reason') or ''), MAX_REASON_CHARS)})")
    return "; ".join(parts) or None


def _summary_line(d: dict[str, Any]) -> str:
    line = f"summary refreshed ({d.get('source') or '?'}, {d.get('folded_messages') or 0} older message(s) folded)"
    return line + (f": {_short(d['fallback'], MAX_REASON_CHARS)}" if d.get("fallback") else "")


def _retrieval_line(d: dict[str, Any]) -> str:
    results = d.get("results") or []
    total = d.get("total", len(results))
    qid = d.get("query_id")
    noun = "document" if total == 1 else "documents"
    head = f"retrieved {len(results)} of {total} {noun}" + (f" (query {qid})" if qid is not None else "")
    if not results:
        return head
    shown = []
    for r in results[:MAX_PATHS]:
        score = r.get("score")
        shown.append(f"{r.get('path')} ({score:.2f})" if isinstance(score, (int, float)) else str(r.get("path")))
    more = f", +{len(results) - MAX_PATHS} more" if len(results) > MAX_PATHS else ""
    return f"{head}: {', '.join(shown)}{more}"


def _compression_line(d: dict[str, Any]) -> str:
    before, after = d.get("tokens_before"), d.get("tokens_after")
    line = f"context compressed (level {d.get('level')}%)"
    if isinstance(before, int) and isinstance(after, int):
        line += f": {before:,} → {after:,} tokens"
    if d.get("fallback"):
        line += f" ({_short(d['fallback'], MAX_REASON_CHARS)})"
    return line


def _tool_call_line(d: dict[str, Any]) -> str:
    if d.get("label"):
        return f"tool {_short(d['label'], MAX_ARGS_CHARS + 20)}"
    args = d.get("arguments")
    if isinstance(args, dict):
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    else:
        shown = "" if args is None else str(args)
    return f"tool {d.get('name')}({_short(shown, MAX_ARGS_CHARS)})"


def _tool_result_line(d: dict[str, Any]) -> str:
    verdict = "" if d.get("ok", True) else "failed: "
    return f"tool {d.get('name')} → {verdict}{_short(d.get('summary') or '', 120)}"


_LINES: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "input": _input_line,
    "note": lambda d: str(d.get("message") or "") or None,
    "skills": _skills_line,
    "attachments": _attachments_line,
    "summary": _summary_line,
    "retrieval": _retrieval_line,
    "compression": _compression_line,
    "tool_call": _tool_call_line,
    "tool_result": _tool_result_line,
}


def source_dict(engine: Any) -> dict[str, Any]:
    """The engine's source as a dict (the engine may hold a dict or an object with ``to_dict()``)."""
    src = getattr(engine, "source", None)
    if src is not None and hasattr(src, "to_dict"):
        return dict(src.to_dict())
    return dict(src or {})


def event_line(kind: str, data: dict[str, Any] | None) -> str | None:
    """The one-line note for an informational event; None when there is nothing worth a line."""
    fn = _LINES.get(kind)
    return fn(data or {}) if fn else None


def citations_line(citations: Any) -> str | None:
    paths = _names(citations)
    return f"sources: {', '.join(paths)}" if paths else None


def error_line(data: dict[str, Any] | None) -> str:
    data = data or {}
    code = data.get("code")
    return f"error{f' ({code})' if code else ''}: {data.get('message') or 'the turn failed'}"


def context_percent(status: dict[str, Any]) -> float | None:
    """Context use in % of the window (:func:`kb_indexer.chat.usage.context_share`, from the tokens and window, so
    it does not depend on whether ``context_pct`` is a fraction or a percentage), else ``context_pct`` as given."""
    share = context_share(status.get("context_tokens"), status.get("window"))
    if share is not None:
        return share
    pct = status.get("context_pct")
    return float(pct) if isinstance(pct, (int, float)) else None


def toolbar_text(status: dict[str, Any]) -> str:
    """The bottom toolbar: model, context use in % of the window, loaded skills."""
    pct = context_percent(status)
    window = status.get("window")
    ctx = "context ?" if pct is None else f"context {pct:.0f}%"
    if isinstance(window, int):
        ctx += f" of {window:,}"
    skills = _names(status.get("loaded_skills"))
    return f" {status.get('model') or '?'} │ {ctx} │ skills: {', '.join(skills) if skills else 'none'} "
