"""Conversation sessions in the index: messages with timestamps and a question flag, and a rolling summary.

``kbindex context add`` appends messages; ``context build`` reads them (and may refresh the summary);
``context show|reset|sessions`` inspect and forget. Every write is one ``BEGIN IMMEDIATE`` transaction
and a message's ``seq`` is given out inside it, so two processes adding to one session at once both
land, one after the other, and nothing is lost.
"""

from __future__ import annotations

import re
from typing import Any

from kb_indexer.context.normalise import normalise
from kb_indexer.errors import NotFoundError
from kb_indexer.store.connection import transaction
from kb_indexer.store.dbapi import Connection, Row

ROLES = ("user", "assistant")
_TRAILING = re.compile(r"[\s*_`\"'”’»)\]」』]+$")


def ends_with_question(text: str) -> bool:
    """Whether a message asks something: its text ends with a question mark (closing quotes, brackets,
    markdown emphasis and exclamation marks after it do not count: "Really?!")."""
    return _TRAILING.sub("", text).rstrip("!！").endswith(("?", "？"))


def _touch(conn: Connection, sid: str) -> None:
    conn.execute("INSERT INTO context_sessions (id) VALUES (?) ON CONFLICT(id) DO UPDATE SET "
                 "updated_at = strftime('%Y-%m-%dT%H:%M:%S', 'now')", (sid,))


def add_messages(conn: Connection, sid: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Append checked messages (``role``, ``content``, optional ``is_question``) in one transaction.

    A user message is stored with its normalised form. An assistant message is a question when it is
    flagged so or ends with a question mark; ``is_question`` is never set on a user message (the design
    tracks the assistant's clarifications)."""
    added = []
    with transaction(conn):
        _touch(conn, sid)
        seq = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM context_messages WHERE session_id = ?",
                           (sid,)).fetchone()[0]
        for item in items:
            seq += 1
            role, content = item["role"], item["content"]
            question = role == "assistant" and (bool(item.get("is_question")) or ends_with_question(content))
            norm = normalise(content) if role == "user" else None
            conn.execute("INSERT INTO context_messages (session_id, seq, role, content, normalised, is_question) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (sid, seq, role, content, norm, int(question)))
            added.append({"seq": seq, "role": role, "is_question": question, "normalised": norm})
        total = conn.execute("SELECT COUNT(*) FROM context_messages WHERE session_id = ?", (sid,)).fetchone()[0]
    return {"session": sid, "added": added, "messages": total}


def session_row(conn: Connection, sid: str) -> Row | None:
    row: Row | None = conn.execute("SELECT * FROM context_sessions WHERE id = ?", (sid,)).fetchone()
    return row


def require_session(conn: Connection, sid: str) -> Row:
    row = session_row(conn, sid)
    if row is None:
        raise NotFoundError(f"Unknown context session: {sid!r} (`kbindex context add --session ID ...` "
                            "starts one)")
    return row


def load_messages(conn: Connection, sid: str) -> list[dict[str, Any]]:
    return [{"seq": r["seq"], "role": r["role"], "content": r["content"], "normalised": r["normalised"],
             "is_question": bool(r["is_question"]), "created_at": r["created_at"]}
            for r in conn.execute("SELECT seq, role, content, normalised, is_question, created_at "
                                  "FROM context_messages WHERE session_id = ? ORDER BY seq", (sid,))]


def summary_of(row: Row | None) -> dict[str, Any] | None:
    if row is None or not row["summary"]:
        return None
    return {"text": row["summary"], "source": row["summary_source"], "covers_through": row["summary_through"],
            "updated_at": row["summary_updated_at"]}


def save_summary(conn: Connection, sid: str, text: str, source: str, through: int) -> None:
    """Store a refreshed summary unless another process stored one covering more meanwhile."""
    with transaction(conn):
        conn.execute("UPDATE context_sessions SET summary = ?, summary_source = ?, summary_through = ?, "
                     "summary_updated_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') "
                     "WHERE id = ? AND summary_through <= ?", (text, source, through, sid, through))


def show_session(conn: Connection, sid: str) -> dict[str, Any]:
    row = require_session(conn, sid)
    messages = load_messages(conn, sid)
    return {"session": sid, "created_at": row["created_at"], "updated_at": row["updated_at"],
            "summary": summary_of(row), "messages": messages, "count": len(messages)}


def reset_session(conn: Connection, sid: str) -> dict[str, Any]:
    """Forget a session's messages and summary; not an error when it does not exist."""
    with transaction(conn):
        removed = conn.execute("DELETE FROM context_messages WHERE session_id = ?", (sid,)).rowcount
        existed = conn.execute("DELETE FROM context_sessions WHERE id = ?", (sid,)).rowcount > 0
    return {"action": "reset", "session": sid, "existed": existed, "messages_removed": removed}


def list_sessions(conn: Connection) -> dict[str, Any]:
    rows = conn.execute(
        "SELECT s.id, s.created_at, s.updated_at, s.summary != '' AS has_summary, COUNT(m.seq) AS messages, "
        "COALESCE(SUM(CASE WHEN m.role = 'user' THEN 1 ELSE 0 END), 0) AS user_messages FROM context_sessions s "
        "LEFT JOIN context_messages m ON m.session_id = s.id GROUP BY s.id ORDER BY s.updated_at DESC, s.id")
    sessions = [{"session": r["id"], "messages": r["messages"], "user_messages": r["user_messages"],
                 "has_summary": bool(r["has_summary"]), "created_at": r["created_at"],
                 "updated_at": r["updated_at"]} for r in rows]
    return {"sessions": sessions, "count": len(sessions)}
