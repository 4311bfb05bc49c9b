"""Chat context assembly: rolling summary + recent user messages + last assistant question + the message.

The design (chat-context-strategy.md): on every user message, send the LLM a bounded context block

    Context:
    - Summary: <summary or empty>
    - Recent user messages:
      1) ...
    - Last assistant question: <only if the last assistant message asked one>

    Current user message: <the normalised message>

* Recent window: the last ``recent`` user messages (default 8; the design says 6 to 8), as the user
  wrote them. If the session's last message is the current message itself (an agent that records
  first, then builds), it is not repeated in the window.
* Rolling summary: once the session holds more than ``summary_after`` messages (default 12), every
  message older than the recent window is folded into the summary, incrementally (the previous summary
  plus the messages it does not cover yet), by the LLM when one is configured (cached), else by the
  extractive summariser; at most ``SUMMARY_CHARS`` characters. It is stored, so the next build only
  folds in what aged out since.
* Last assistant question: the session's last message, when it is an assistant message that asked one
  (a question the user already answered is not repeated).
* Size cap ``max_chars`` on the whole block: the oldest recent messages are dropped first, then the
  summary is shortened, then the last question, and last the current message is cut, its start and end
  kept (``message_cut``; :func:`kb_indexer.context.fit.cut_chars`): the block never exceeds the cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kb_indexer.context import extractive, fit, store
from kb_indexer.context.llm_summary import SummaryFailed, summarise_history
from kb_indexer.context.normalise import normalise
from kb_indexer.tokens import estimate_tokens

DEFAULT_RECENT = 8
SUMMARY_AFTER = 12
SUMMARY_CHARS = 600
DEFAULT_MAX_CHARS = 6000


@dataclass
class BuildOptions:
    recent: int = DEFAULT_RECENT
    summary_after: int = SUMMARY_AFTER
    max_chars: int = DEFAULT_MAX_CHARS
    client: Any = None                 # an LLMClient, or None: the extractive summary
    no_llm_reason: str | None = None


def cap_chars(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a line or sentence end when there is one in reach."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    end = max(cut.rfind("\n"), cut.rfind(". "))
    return (cut[:end + 1] if end > limit // 2 else cut).rstrip() + "…"


def _refresh_summary(conn: Any, sid: str, row: Any, aged: list[dict[str, Any]],
                     opts: BuildOptions) -> dict[str, Any]:
    """Fold the aged-out messages the summary does not cover into it; what happened."""
    through = row["summary_through"] if row is not None else 0
    new = [m for m in aged if m["seq"] > through]
    if not new:
        return {"refreshed": False}
    previous = row["summary"] if row is not None else ""
    budget = SUMMARY_CHARS // 4
    info: dict[str, Any] = {"refreshed": True, "folded_messages": len(new), "fallback": None}
    text = None
    if opts.client is not None:
        try:
            text, llm = summarise_history(opts.client, new, budget, level=0, ratio=None, previous=previous)
            info.update(source="llm", cached=llm["cached"])
            if llm.get("usage"):   # the server's own count beside kbindex's estimate
                info["token_counts"] = {"estimate": llm["prompt_tokens_estimate"], **llm["usage"]}
        except SummaryFailed as exc:
            info["fallback"] = f"LLM {opts.client.config.backend} failed: {exc.reason}; extractive summary"
    elif opts.no_llm_reason:
        info["fallback"] = opts.no_llm_reason
    if text is None:
        text = extractive.summarise(new, SUMMARY_CHARS, previous=previous, max_chars=SUMMARY_CHARS)[0]
        info["source"] = "extractive"
    text = cap_chars(text, SUMMARY_CHARS)
    store.save_summary(conn, sid, text, info["source"], new[-1]["seq"])
    return info


def _window(messages: list[dict[str, Any]], message: str, recent: int) -> tuple[list[dict[str, Any]], bool]:
    """The last ``recent`` user messages (without the current one if it was just recorded)."""
    users = [m for m in messages if m["role"] == "user"]
    recorded = bool(messages) and messages[-1]["role"] == "user" and messages[-1]["content"] == message
    if recorded:
        users = users[:-1]
    return (users[-recent:] if recent else []), recorded


def _open_question(messages: list[dict[str, Any]]) -> str | None:
    """The last assistant message if it asked a question the user has not answered yet (it is the
    session's last message): once the user replied, the question is no longer pending."""
    last = messages[-1] if messages else None
    return last["content"] if last and last["role"] == "assistant" and last["is_question"] else None


def render(summary: str, recent: list[str], question: str | None, current: str) -> str:
    summary = "\n    ".join(line.strip() for line in summary.splitlines() if line.strip())
    lines = ["Context:", f"- Summary: {summary}".rstrip(), "- Recent user messages:"]
    lines += [f"  {i}) {' '.join(text.split())}" for i, text in enumerate(recent, 1)]
    if question:
        lines.append(f"- Last assistant question: {' '.join(question.split())}")
    return "\n".join(lines) + f"\n\nCurrent user message: {current}"


def _fit(summary: str, recent: list[str], question: str | None, current: str,
         max_chars: int) -> tuple[str, list[str], str | None, str, dict[str, Any]]:
    """Apply the size cap: oldest recent messages first, then the summary, then the question, then the
    current message."""
    dropped = 0
    while recent and len(render(summary, recent, question, current)) > max_chars:
        recent = recent[1:]
        dropped += 1
    over = len(render(summary, recent, question, current)) - max_chars
    cut_summary = cut_question = False
    if over > 0 and summary:
        summary = cap_chars(summary, max(0, len(summary) - over)) if len(summary) > over else ""
        cut_summary = True
    over = len(render(summary, recent, question, current)) - max_chars
    if over > 0 and question:
        question = cap_chars(question, len(question) - over) if len(question) > over + 20 else None
        cut_question = True
    over = len(render(summary, recent, question, current)) - max_chars
    if over > 0:
        current = fit.cut_chars(current, max(0, len(current) - over))
    return summary, recent, question, current, {"dropped_recent": dropped, "summary_cut": cut_summary,
                                                "question_cut": cut_question, "message_cut": over > 0}


def build(conn: Any, sid: str, message: str, opts: BuildOptions) -> dict[str, Any]:
    """The context block for ``message`` in session ``sid`` (an unknown session has an empty context)."""
    row = store.session_row(conn, sid)
    messages = store.load_messages(conn, sid) if row is not None else []
    window, recorded = _window(messages, message, opts.recent)
    first = window[0]["seq"] if window else (messages[-1]["seq"] + 1 if messages else 0)
    aged = [m for m in messages if m["seq"] < first and not (recorded and m is messages[-1])]
    refresh: dict[str, Any] = {"refreshed": False}
    if len(messages) > opts.summary_after and aged:
        refresh = _refresh_summary(conn, sid, row, aged, opts)
        row = store.session_row(conn, sid)
    summary = store.summary_of(row)
    question = _open_question(messages[:-1] if recorded else messages)
    current = normalise(message)
    text, recent, question, sent, fitted = _fit(summary["text"] if summary else "", [m["content"] for m in window],
                                                question, current, opts.max_chars)
    prompt = render(text, recent, question, sent)
    stats = {"session_messages": len(messages), "recent_used": len(recent), "recent_limit": opts.recent,
             "current_recorded": recorded, "summary_refresh": refresh, **fitted, "prompt_chars": len(prompt),
             "over_max_chars": len(prompt) > opts.max_chars,
             "prompt_tokens_estimate": estimate_tokens(prompt), "max_chars": opts.max_chars}
    return {"session": sid, "summary": dict(summary, text=text) if summary else None,
            "recent_user_messages": recent, "last_assistant_question": question,
            "message": {"original": message, "normalised": current}, "prompt": prompt, "stats": stats}
