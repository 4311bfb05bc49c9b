"""Skill sessions: which skills a conversation has loaded, kept in the index across processes.

Agents call ``kbindex skills match MESSAGE --session ID`` once per user message, each time as a new
process, so the state lives in ``skill_sessions``, ``skill_session_messages`` and ``skill_session_skills``.
One match is one turn, written in one transaction (``BEGIN IMMEDIATE``): two processes matching in the
same session at once both succeed, one after the other (turns 1 and 2).

A turn, in order:

1. the session's turn counter goes up by one and the message is stored;
2. every matched skill gets ``last_matched_turn`` = this turn, one more match, priority ``active`` and is
   loaded (``newly_loaded`` when it was not loaded before);
3. every other loaded skill gets priority ``relevant``; one not matched in the last ``evict_after`` turns
   (``turn - last_matched_turn >= evict_after``) is evicted unless it is still relevant: the keyword
   matcher finds it in the session's last ``evict_after`` messages taken together;
4. while more than ``max_loaded`` skills are loaded, the least important is evicted: ``relevant`` before
   ``active``, then the fewest matches, then the oldest last match (then by name).

The importance order (``active`` first, then most matched, then most recently matched, then name) is also
the order of ``skills load``, which prints the loaded skills' bodies within a token budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kb_indexer.errors import NotFoundError
from kb_indexer.skills.match import SkillIndex, relevant_names
from kb_indexer.store.connection import transaction
from kb_indexer.tokens import estimate_tokens
from kb_indexer.store.dbapi import Connection, Row

DEFAULT_EVICT_AFTER = 3
DEFAULT_MAX_LOADED = 5
IMPORTANCE = ("CASE priority WHEN 'active' THEN 0 ELSE 1 END, match_count DESC, last_matched_turn DESC, "
              "skill_name")


@dataclass
class SessionOptions:
    id: str
    evict_after: int = DEFAULT_EVICT_AFTER
    max_loaded: int = DEFAULT_MAX_LOADED


def _next_turn(conn: Connection, sid: str, message: str) -> int:
    conn.execute("INSERT INTO skill_sessions (id) VALUES (?) ON CONFLICT(id) DO NOTHING", (sid,))
    conn.execute("UPDATE skill_sessions SET turn = turn + 1, updated_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') "
                 "WHERE id = ?", (sid,))
    turn: int = conn.execute("SELECT turn FROM skill_sessions WHERE id = ?", (sid,)).fetchone()[0]
    conn.execute("INSERT INTO skill_session_messages (session_id, turn, message) VALUES (?, ?, ?)",
                 (sid, turn, message))
    return turn


def _load_matched(conn: Connection, sid: str, turn: int, names: list[str]) -> list[str]:
    """Mark the matched skills active and loaded; the ones that were not loaded before."""
    loaded_before = {r[0] for r in conn.execute(
        "SELECT skill_name FROM skill_session_skills WHERE session_id = ? AND loaded = 1", (sid,))}
    for name in names:
        conn.execute(
            "INSERT INTO skill_session_skills (session_id, skill_name, last_matched_turn, match_count, priority, "
            "loaded) VALUES (?, ?, ?, 1, 'active', 1) ON CONFLICT(session_id, skill_name) DO UPDATE SET "
            "last_matched_turn = excluded.last_matched_turn, match_count = skill_session_skills.match_count + 1, "
            "priority = 'active', loaded = 1", (sid, name, turn))
    return [n for n in names if n not in loaded_before]


def _recent_text(conn: Connection, sid: str, turn: int, n: int) -> str:
    rows = conn.execute("SELECT message FROM skill_session_messages WHERE session_id = ? AND turn > ? "
                        "ORDER BY turn", (sid, turn - n))
    return "\n".join(r[0] for r in rows)


def _evict(conn: Connection, sid: str, name: str) -> None:
    conn.execute("UPDATE skill_session_skills SET loaded = 0, priority = 'relevant' "
                 "WHERE session_id = ? AND skill_name = ?", (sid, name))


def _age_out(conn: Connection, index: SkillIndex, opts: SessionOptions, turn: int,
             matched: set[str]) -> list[str]:
    """Step 3: loaded skills not matched this turn become ``relevant``; stale ones not relevant go."""
    sid = opts.id
    conn.execute("UPDATE skill_session_skills SET priority = 'relevant' WHERE session_id = ? AND loaded = 1 "
                 "AND last_matched_turn < ?", (sid, turn))
    stale = [r[0] for r in conn.execute(
        "SELECT skill_name FROM skill_session_skills WHERE session_id = ? AND loaded = 1 AND ? - last_matched_turn "
        ">= ? ORDER BY skill_name", (sid, turn, opts.evict_after)) if r[0] not in matched]
    if not stale:
        return []
    relevant = relevant_names(index, _recent_text(conn, sid, turn, opts.evict_after))
    evicted = [name for name in stale if name not in relevant]
    for name in evicted:
        _evict(conn, sid, name)
    return evicted


def _cap(conn: Connection, opts: SessionOptions) -> list[str]:
    """Step 4: evict the least important loaded skills beyond ``max_loaded``."""
    loaded = [r[0] for r in conn.execute(
        f"SELECT skill_name FROM skill_session_skills WHERE session_id = ? AND loaded = 1 ORDER BY {IMPORTANCE}",
        (opts.id,))]
    evicted = loaded[opts.max_loaded:]
    for name in evicted:
        _evict(conn, opts.id, name)
    return evicted


def _skills(conn: Connection, sid: str, loaded_only: bool = False) -> list[dict[str, Any]]:
    where = " AND loaded = 1" if loaded_only else ""
    return [{"name": r[0], "priority": r[1], "match_count": r[2], "last_matched_turn": r[3], "loaded": bool(r[4])}
            for r in conn.execute(
                "SELECT skill_name, priority, match_count, last_matched_turn, loaded FROM skill_session_skills "
                f"WHERE session_id = ?{where} ORDER BY loaded DESC, {IMPORTANCE}", (sid,))]


def record_turn(conn: Connection, index: SkillIndex, message: str, matched: list[str],
                opts: SessionOptions) -> dict[str, Any]:
    """One turn of a session (see the module docstring), in one write transaction."""
    with transaction(conn):
        turn = _next_turn(conn, opts.id, message)
        newly = _load_matched(conn, opts.id, turn, matched)
        evicted = _age_out(conn, index, opts, turn, set(matched))
        evicted += _cap(conn, opts)
        loaded = _skills(conn, opts.id, loaded_only=True)
    return {"id": opts.id, "turn": turn, "loaded": [s["name"] for s in loaded],
            "newly_loaded": [n for n in newly if n not in evicted], "evicted": evicted, "skills": loaded,
            "evict_after": opts.evict_after, "max_loaded": opts.max_loaded}


def _require(conn: Connection, sid: str) -> Row:
    row: Row | None = conn.execute("SELECT id, turn, created_at, updated_at FROM skill_sessions WHERE id = ?",
                                           (sid,)).fetchone()
    if row is None:
        raise NotFoundError(f"Unknown skill session: {sid!r} (`kbindex skills match MESSAGE --session ID` "
                            "starts one)")
    return row


def show_session(conn: Connection, sid: str) -> dict[str, Any]:
    row = _require(conn, sid)
    messages = [{"turn": r[0], "message": r[1]} for r in conn.execute(
        "SELECT turn, message FROM skill_session_messages WHERE session_id = ? ORDER BY turn", (sid,))]
    skills = _skills(conn, sid)
    return {"id": row["id"], "turn": row["turn"], "created_at": row["created_at"], "updated_at": row["updated_at"],
            "loaded": [s["name"] for s in skills if s["loaded"]], "skills": skills, "messages": messages}


def reset_session(conn: Connection, sid: str) -> dict[str, Any]:
    """Forget a session (its turns, messages and skills); not an error when it does not exist."""
    with transaction(conn):
        existed = conn.execute("DELETE FROM skill_sessions WHERE id = ?", (sid,)).rowcount > 0
        conn.execute("DELETE FROM skill_session_messages WHERE session_id = ?", (sid,))
        conn.execute("DELETE FROM skill_session_skills WHERE session_id = ?", (sid,))
    return {"action": "reset", "id": sid, "existed": existed}


def render_skill(name: str, description: str, body: str) -> str:
    """One loaded skill as markdown for a prompt."""
    text = f"## Skill: {name}\n\n{description.strip()}\n"
    return text + (f"\n{body.strip()}\n" if body.strip() else "")


def load_skills(conn: Connection, sid: str, budget: int | None = None) -> dict[str, Any]:
    """The loaded skills' bodies, most important first, as many as fit in ``budget`` estimated tokens
    (a skill that does not fit is left out and the next, smaller one may still fit)."""
    row = _require(conn, sid)
    skills, left_out, used = [], [], 0
    for s in _skills(conn, sid, loaded_only=True):
        r = conn.execute("SELECT description, body FROM skills WHERE name = ?", (s["name"],)).fetchone()
        if r is None:
            left_out.append({"name": s["name"], "reason": "no longer indexed"})
            continue
        text = render_skill(s["name"], r["description"], r["body"])
        cost = estimate_tokens(text)
        if budget is not None and used + cost > budget:
            left_out.append({"name": s["name"], "reason": "budget", "tokens": cost})
            continue
        used += cost
        skills.append({**s, "description": r["description"], "body": r["body"], "tokens": cost, "markdown": text})
    return {"id": sid, "turn": row["turn"], "budget": budget, "tokens": used, "skills": skills,
            "left_out": left_out, "markdown": "\n".join(s["markdown"] for s in skills)}
