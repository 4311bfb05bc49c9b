"""Query history readers, feedback recording, clearing history."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from kb_indexer.errors import NotFoundError, UsageError, ValidationError
from kb_indexer.limits import MAX_FEEDBACK_MARKS, MAX_ID, check_id
from kb_indexer.store.connection import read_snapshot, together
from kb_indexer.text import age_phrase, age_seconds
from kb_indexer.store.dbapi import Connection, Row
from kb_indexer.store.documents import close_paths
from kb_indexer.store.errors import IntegrityError
from kb_indexer.store.team import current_asker, require_role


def _no_query(query_id: int, since: str = "") -> NotFoundError:
    """The one message for a query id that names no recorded query (``since``: why it is gone)."""
    return NotFoundError(f"No query with id {query_id}{since}: the ids are those queries returned (`kbindex "
                         "history` lists them)")


def require_query(conn: Connection, query_id: int) -> Row:
    check_id(query_id, "query id")  # 2^63 and above: invalid_input, not an OverflowError from SQLite
    row: Row | None = conn.execute("SELECT * FROM queries WHERE id = ?", (query_id,)).fetchone()
    if row is None:
        raise _no_query(query_id)
    return row


def last_query_id(conn: Connection) -> int:
    """The query of this asker's latest attempt (``--last``: on a shared index, not another member's question)."""
    row = conn.execute("SELECT query_id FROM query_attempts WHERE asker = kb_asker() ORDER BY id DESC LIMIT 1"
                       ).fetchone()
    if row is None:
        raise NotFoundError(f"No queries recorded yet by {current_asker(conn)} (run `kbindex query` first, or give "
                            "the query id: `kbindex history` lists everyone's)")
    query_id: int = row[0]
    return query_id


def _attempt_dict(r: Row, full: bool = False) -> dict[str, Any]:
    out = {"attempt_id": r["id"], "asker": r["asker"], "keywords": json.loads(r["keywords"] or "[]"),
           "method": r["method"],
           "expand_depth": r["expand_depth"], "threshold": r["threshold"], "result_count": r["result_count"],
           "created_at": r["created_at"]}
    if full:
        out["top_results"] = json.loads(r["top_results"] or "[]")
    return out


def _ages(iso: str | None, now: datetime) -> dict[str, Any]:
    seconds = age_seconds(iso, now)
    return {"age_seconds": seconds, "age": age_phrase(seconds)}


def summary_line(question: str, attempts: int, age: str | None, keywords: list[str] | None = None) -> str:
    """The design's history line: ``"How does AlphaGo work?" (2 attempts, 1 hour ago)``; a query with no
    question names its first attempt's ``keywords``: ``keywords RL, DQN (1 attempt, just now)``."""
    asked = "keywords " + ", ".join(map(str, keywords)) if not question and keywords else f'"{question}"'
    return f'{asked} ({attempts} attempt{"" if attempts == 1 else "s"}{", " + age if age else ""})'


def _keyword_list(raw: str | None) -> list[str]:
    """An attempt's stored keywords (a JSON list of strings; anything else: none)."""
    try:
        words = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(w) for w in words] if isinstance(words, list) else []


#: Queries read per statement by :func:`history_rows` (a listing of them all reads them a batch at a time).
HISTORY_BATCH = 1000
_HISTORY_SQL = (
    "SELECT q.*, (SELECT COUNT(*) FROM query_attempts a WHERE a.query_id = q.id) AS attempts, "
    "(SELECT COUNT(*) FROM query_feedback f WHERE f.query_id = q.id) AS feedback, "
    "(SELECT a.keywords FROM query_attempts a WHERE a.query_id = q.id ORDER BY a.id LIMIT 1) AS keywords "
    "FROM queries q {where}ORDER BY q.last_attempted_at DESC, q.id DESC LIMIT ?")


def history_rows(conn: Connection, limit: int = 10, now: datetime | None = None) -> Iterator[dict[str, Any]]:
    """The ``limit`` most recent queries (0: all), latest first, read a batch at a time as they are used (by
    the index on the order: memory and time per batch stay the same however many there are), in one
    snapshot; ``age`` / ``age_seconds`` count from the last attempt."""
    now = now or datetime.now(timezone.utc)
    left = limit or MAX_ID
    after: tuple[Any, ...] = ()
    with read_snapshot(conn):
        while left > 0:
            n = min(left, HISTORY_BATCH)
            where = "WHERE (q.last_attempted_at, q.id) < (?, ?) " if after else ""
            rows = conn.execute(_HISTORY_SQL.format(where=where), (*after, n)).fetchall()
            for r in rows:
                yield _history_item(r, now)
            if len(rows) < n:
                return
            left -= n
            after = (rows[-1]["last_attempted_at"], rows[-1]["id"])


def _history_item(r: Row, now: datetime) -> dict[str, Any]:
    ages = _ages(r["last_attempted_at"], now)
    return {"query_id": r["id"], "question": r["question"], "context": r["context"] or None, "asker": r["asker"],
            "attempts": r["attempts"], "feedback": r["feedback"], "created_at": r["created_at"],
            "last_attempted_at": r["last_attempted_at"], **ages,
            "summary": summary_line(r["question"], r["attempts"], ages["age"], _keyword_list(r["keywords"]))}


def history_list(conn: Connection, limit: int = 10, now: datetime | None = None) -> dict[str, Any]:
    """Recent queries (:func:`history_rows`) with their count."""
    items = list(history_rows(conn, limit, now))
    return {"queries": items, "count": len(items)}


def history_detail(conn: Connection, query_id: int, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(timezone.utc)
    q = require_query(conn, query_id)
    attempts = [dict(_attempt_dict(r, full=True), **_ages(r["created_at"], now)) for r in conn.execute(
        "SELECT * FROM query_attempts WHERE query_id = ? ORDER BY id", (query_id,))]
    ages = _ages(q["last_attempted_at"], now)
    return {"query_id": q["id"], "question": q["question"], "context": q["context"] or None, "asker": q["asker"],
            "created_at": q["created_at"],
            "last_attempted_at": q["last_attempted_at"], **ages,
            "summary": summary_line(q["question"], len(attempts), ages["age"],
                                    attempts[0]["keywords"] if attempts else None), "attempts": attempts,
            "feedback": feedback_rows(conn, query_id)}


def feedback_rows(conn: Connection, query_id: int) -> list[dict[str, Any]]:
    return [{"feedback_id": r["id"], "filepath": r["filepath"], "helpful": bool(r["helpful"]), "asker": r["asker"],
             "attempt_id": r["attempt_id"], "notes": r["notes"], "processed": bool(r["processed"]),
             "excluded": bool(r["excluded"]), "created_at": r["created_at"]}
            for r in conn.execute("SELECT * FROM query_feedback WHERE query_id = ? ORDER BY id", (query_id,))]


def _attempt_for(attempts: list[Row], filepath: str) -> int | None:
    """The latest of the query's attempts (``(id, top_results)``, latest first) whose recorded results include
    the document."""
    for r in attempts:
        try:
            results = json.loads(r[1] or "[]")
        except json.JSONDecodeError:
            continue
        if any(isinstance(x, dict) and x.get("filepath") == filepath for x in results):
            attempt_id: int = r[0]
            return attempt_id
    return None


def _marks(helpful: list[str], not_helpful: list[str],
           resolve_path: Callable[[str], str] | None) -> tuple[dict[str, bool], str | None]:
    """(path -> helpful, the path marked both ways if one is)."""
    marks: dict[str, bool] = {}
    for files, value in ((helpful, True), (not_helpful, False)):
        for f in files:
            path = resolve_path(f) if resolve_path else f
            if path in marks and marks[path] != value:
                return marks, path
            marks[path] = value
    return marks, None


def _with_guess(conn: Connection, path: str) -> str:
    """A path that is not indexed, with the documents it may have meant (``docker.md``: ``work/docker.md``)."""
    close = close_paths(conn, path)
    return f"{path} (did you mean {' or '.join(close)}?)" if close else path


def record_feedback(conn: Connection, query_id: int, helpful: list[str], not_helpful: list[str],
                    notes: str | None = None, attempt_id: int | None = None,
                    resolve_path: Callable[[str], str] | None = None) -> dict[str, Any]:
    """Record helpful / not-helpful marks in one transaction; every file must be indexed. What is checked is
    read in one go and the marks written in another (on PostgreSQL: two round trips)."""
    if not helpful and not not_helpful:
        raise UsageError("give at least one helpful or not-helpful document")
    check_id(query_id, "query id")  # 2^63 and above: invalid_input, not an OverflowError from SQLite
    if len(helpful) + len(not_helpful) > MAX_FEEDBACK_MARKS:
        raise ValidationError(f"{len(helpful) + len(not_helpful)} documents marked at once: at most "
                              f"{MAX_FEEDBACK_MARKS} in one feedback")
    attempt_ok = attempt_id is not None and isinstance(attempt_id, int) and 1 <= attempt_id <= MAX_ID
    marks, both = _marks(helpful, not_helpful, resolve_path)
    with together(conn):
        query = conn.execute("SELECT id FROM queries WHERE id = ?", (query_id,))
        owner = conn.execute("SELECT query_id FROM query_attempts WHERE id = ?", (attempt_id if attempt_ok else 0,))
        known = [conn.execute("SELECT 1 FROM documents WHERE filepath = ?", (p,)) for p in marks]
        read = conn.execute("SELECT id, top_results FROM query_attempts WHERE query_id = ? ORDER BY id DESC",
                            (query_id if attempt_id is None else 0,))
    found, owners, attempts = query.fetchall(), owner.fetchall(), read.fetchall()   # every cursor read to its end
    missing = [p for p, cur in zip(marks, known) if not cur.fetchall()]
    if not found:
        raise _no_query(query_id)
    if attempt_id is not None:
        check_id(attempt_id, "attempt id")
        if not owners or owners[0][0] != query_id:
            raise ValidationError(f"Attempt {attempt_id} does not belong to query {query_id}")
    if both is not None:
        raise UsageError(f"{both} is marked both helpful and not helpful")
    if missing:
        shown = ", ".join(_with_guess(conn, p) for p in missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise ValidationError(f"Not in the index: {shown} (feedback is only for indexed documents)", code="not_found")
    recorded, unlinked, links = [], [], {}
    for path, value in marks.items():
        att = attempt_id if attempt_id is not None else _attempt_for(attempts, path)
        if att is None:
            att = attempts[0][0] if attempts else None   # the query's latest attempt
            unlinked.append(path)
        links[path] = att
        recorded.append({"filepath": path, "helpful": value, "attempt_id": att})
    try:
        with together(conn, write=True):
            for path, value in marks.items():
                conn.execute(
                    "INSERT INTO query_feedback (query_id, attempt_id, filepath, helpful, notes, processed, asker) "
                    "VALUES (?, ?, ?, ?, ?, 0, kb_asker()) ON CONFLICT(query_id, filepath, asker) DO UPDATE SET "
                    "attempt_id = excluded.attempt_id, helpful = excluded.helpful, "
                    "notes = COALESCE(excluded.notes, query_feedback.notes), processed = 0, "
                    "created_at = strftime('%Y-%m-%dT%H:%M:%S', 'now')",
                    (query_id, links[path], path, int(value), notes))
    except IntegrityError:   # deleted since the check (clear-history, import --force, sync in another process)
        raise _no_query(query_id, " any more (it, its attempt or a document was removed while the feedback was "
                                  "recorded)") from None
    out: dict[str, Any] = {"query_id": query_id, "recorded": recorded, "count": len(recorded)}
    if unlinked:
        out["not_in_results"] = unlinked
    return out


def parse_before(before: str, option: str = "--before") -> str:
    """A date or ISO-8601 time (UTC unless it has an offset) as stored in the history (naive UTC)."""
    try:
        when = datetime.fromisoformat(before.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise UsageError(f"{option} must be a date like 2026-01-31, got {before!r}") from None
    if when.tzinfo is not None:  # stored times are UTC
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def clear_history(conn: Connection, before: str | None = None) -> dict[str, Any]:
    """Delete queries (with their attempts and feedback), all (``before`` None: ``--all``, the curator's or the
    owner's) or those last asked before a date: one statement per table, whatever their number (on PostgreSQL
    sent together: one round trip). A member's ``--before`` deletes its own attempts and marks, and the questions
    that only it asked; the curator's and the owner's everyone's."""
    if before is not None:
        before = parse_before(before)
    who = require_role(conn, "curator" if before is None else "member",
                       "clear-history --all" if before is None else "clear-history")
    where, params = ("WHERE last_attempted_at < ?", (before,)) if before else ("", ())
    chosen = f"query_id IN (SELECT id FROM queries {where})"
    if who == "member":
        return _clear_own_history(conn, chosen, params, before)
    with together(conn, write=True):
        feedback = conn.execute(f"DELETE FROM query_feedback WHERE {chosen}", params)
        conn.execute(f"DELETE FROM query_attempts WHERE {chosen}", params)
        queries = conn.execute(f"DELETE FROM queries {where}", params)
    return {"queries_removed": queries.rowcount, "feedback_removed": feedback.rowcount, "before": before}


def _clear_own_history(conn: Connection, chosen: str, params: tuple[Any, ...], before: str | None) -> dict[str, Any]:
    """A member's clear-history: its marks and attempts on the chosen queries; the queries it asked first that no
    one else's attempt or mark is left on."""
    with together(conn, write=True):
        feedback = conn.execute(f"DELETE FROM query_feedback WHERE asker = kb_asker() AND {chosen}", params)
        conn.execute(f"DELETE FROM query_attempts WHERE asker = kb_asker() AND {chosen}", params)
        queries = conn.execute(
            f"DELETE FROM queries WHERE asker = kb_asker() AND id IN (SELECT id FROM queries "
            f"{'WHERE last_attempted_at < ?' if before else ''}) "
            "AND NOT EXISTS (SELECT 1 FROM query_attempts a WHERE a.query_id = queries.id) "
            "AND NOT EXISTS (SELECT 1 FROM query_feedback f WHERE f.query_id = queries.id)", params)
    return {"queries_removed": queries.rowcount, "feedback_removed": feedback.rowcount, "before": before,
            "asker": current_asker(conn)}
