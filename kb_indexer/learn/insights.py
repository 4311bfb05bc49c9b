"""``kbindex report``: what a team's recorded history says about its index (not learn's own report, which
is :mod:`kb_indexer.learn.report`).

Sections, each ``{"count": N, "items": [...at most limit]}``, over the attempts made since ``since``:

- ``zero_results``: questions whose every attempt in the period returned nothing;
- ``never_helpful``: questions asked at least twice in the period whose results were never marked helpful;
- ``most_asked``: the questions with the most attempts in the period;
- ``feedback_rate``: ``{"overall": {...}, "askers": N, "by_asker": [...]}``, the share of questions with any
  mark, and with a helpful one; per asker, of the questions it asked in the period, the share it marked
  (its own marks), most questions first;
- ``never_returned``: indexed documents in no attempt's recorded ``top_results`` in the period.

A *question* is the recorded question text with case and surrounding spaces ignored, across contexts
(``LOWER(TRIM(question))``): "How does AlphaGo work?" asked in two folders is one question asked twice.
Keyword-only queries (no question) are not questions. Marks count whenever they were given. Every count is
computed in the database in one read snapshot; nothing is written (a SELECT-only role can run it).
"""

from __future__ import annotations

from typing import Any

from kb_indexer.learn.feedback import parse_before
from kb_indexer.learn.history import TOP_RESULTS
from kb_indexer.limits import MAX_ID
from kb_indexer.store.connection import json_items, read_snapshot
from kb_indexer.store.dbapi import Connection

#: Per question in the period: its attempts, best result count, last attempt and marks.
_QUESTIONS = (
    "WITH marks AS (SELECT LOWER(TRIM(q.question)) AS k, MAX(f.helpful) AS helpful FROM query_feedback f "
    "JOIN queries q ON q.id = f.query_id WHERE q.question <> '' GROUP BY LOWER(TRIM(q.question))), "
    "g AS (SELECT LOWER(TRIM(q.question)) AS k, MIN(q.question) AS question, COUNT(*) AS attempts, "
    "MAX(a.result_count) AS best, MAX(a.created_at) AS last_asked FROM query_attempts a "
    "JOIN queries q ON q.id = a.query_id WHERE q.question <> '' AND a.created_at >= ? "
    "GROUP BY LOWER(TRIM(q.question))), "
    "r AS (SELECT g.*, m.helpful AS helpful FROM g LEFT JOIN marks m ON m.k = g.k) ")

#: Per asker, most questions first: the questions it attempted in the period, how many it marked (and helpful).
_BY_ASKER = (
    "WITH am AS (SELECT f.asker AS asker, LOWER(TRIM(q.question)) AS k, MAX(f.helpful) AS helpful "
    "FROM query_feedback f JOIN queries q ON q.id = f.query_id WHERE q.question <> '' "
    "GROUP BY f.asker, LOWER(TRIM(q.question))), "
    "ag AS (SELECT a.asker AS asker, LOWER(TRIM(q.question)) AS k FROM query_attempts a "
    "JOIN queries q ON q.id = a.query_id WHERE q.question <> '' AND a.created_at >= ? "
    "GROUP BY a.asker, LOWER(TRIM(q.question))) "
    "SELECT ag.asker, COUNT(*) AS questions, COUNT(am.helpful), COALESCE(SUM(am.helpful), 0), "
    "COUNT(*) OVER () FROM ag LEFT JOIN am ON am.asker = ag.asker AND am.k = ag.k GROUP BY ag.asker "
    "ORDER BY questions DESC, ag.asker LIMIT ?")

_SECTIONS = {
    "zero_results": "best = 0",
    "never_helpful": "attempts >= 2 AND best > 0 AND (helpful IS NULL OR helpful = 0)",
    "most_asked": "1 = 1",
}


def _section(conn: Connection, where: str, since: str, limit: int) -> dict[str, Any]:
    count = conn.execute(f"{_QUESTIONS}SELECT COUNT(*) FROM r WHERE {where}", (since,)).fetchone()[0]
    rows = conn.execute(f"{_QUESTIONS}SELECT question, attempts, last_asked FROM r WHERE {where} "
                        "ORDER BY attempts DESC, last_asked DESC, question LIMIT ?", (since, limit)).fetchall()
    return {"count": int(count), "items": [{"question": q, "attempts": int(n), "last_asked": t} for q, n, t in rows]}


def _rate(total: Any, marked: Any, helpful: Any) -> dict[str, Any]:
    total, marked, helpful = int(total), int(marked), int(helpful)
    return {"questions": total, "marked": marked, "helpful": helpful, "marked_share": _share(marked, total),
            "helpful_share": _share(helpful, total)}


def _rates(conn: Connection, since: str, limit: int) -> dict[str, Any]:
    """``feedback_rate``: overall, and per asker (at most ``limit``; ``askers``: how many there are)."""
    overall = conn.execute(f"{_QUESTIONS}SELECT COUNT(*), COUNT(helpful), COALESCE(SUM(helpful), 0) FROM r",
                           (since,)).fetchone()
    rows = conn.execute(_BY_ASKER, (since, limit)).fetchall()   # the last column: how many askers in all
    return {"overall": _rate(*overall), "askers": int(rows[0][4]) if rows else 0,
            "by_asker": [{"asker": row[0], **_rate(*row[1:4])} for row in rows]}


def _share(part: int, total: int) -> float | None:
    return round(part / total, 4) if total else None


def _never_returned(conn: Connection, since: str, limit: int) -> dict[str, Any]:
    items = json_items(conn, "a.top_results", "filepath")
    returned = (f"SELECT DISTINCT {items.value} AS fp FROM query_attempts a, {items.source} "
                f"WHERE a.created_at >= ? AND {items.valid}")
    where = f"WHERE d.filepath NOT IN (SELECT fp FROM ({returned}) t WHERE fp IS NOT NULL)"
    count = conn.execute(f"SELECT COUNT(*) FROM documents d {where}", (since,)).fetchone()[0]
    rows = conn.execute(f"SELECT d.filepath FROM documents d {where} ORDER BY d.filepath LIMIT ?",
                        (since, limit)).fetchall()
    return {"count": int(count), "items": [r[0] for r in rows], "top_results_recorded": TOP_RESULTS,
            "note": f"only each attempt's first {TOP_RESULTS} results are recorded: a document returned lower "
                    "down counts as never returned"}


def report(conn: Connection, since: str | None = None, limit: int = 10) -> dict[str, Any]:
    """The report (module docstring) over attempts made at or after ``since`` (a date or ISO-8601 time, as
    ``clear-history --before`` takes; None: the whole history), at most ``limit`` items per section."""
    start = parse_before(since, "--since") if since is not None else ""
    limit = limit or MAX_ID   # 0: every item
    with read_snapshot(conn):
        out: dict[str, Any] = {"since": start or None, "limit": 0 if limit == MAX_ID else limit}
        for name, where in _SECTIONS.items():
            out[name] = _section(conn, where, start, limit)
        out["feedback_rate"] = _rates(conn, start, limit)
        out["never_returned"] = _never_returned(conn, start, limit)
    return out
