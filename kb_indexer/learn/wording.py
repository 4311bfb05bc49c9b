"""What a learned item means, in a person's words, for ``learned list``: the questions behind it as they were
asked (not the stemmed terms the matching uses), and a one-line ``summary`` (the table shows it instead of
the internal ``key``, which the JSON keeps)."""

from __future__ import annotations

from typing import Any

from kb_indexer.store.dbapi import Connection

MAX_QUESTIONS = 3


def questions(conn: Connection, feedback_ids: list[int]) -> list[str]:
    """The recorded questions whose feedback an item rests on, oldest first (none once the history is
    cleared: ``clear-history`` removes them, learned items stay)."""
    if not feedback_ids:
        return []
    marks = ", ".join("?" for _ in feedback_ids)
    rows = conn.execute(f"SELECT q.question FROM query_feedback f JOIN queries q ON q.id = f.query_id "
                        f"WHERE f.id IN ({marks}) GROUP BY q.id, q.question ORDER BY q.id", list(feedback_ids))
    return [r[0] for r in rows]


def askers(conn: Connection, feedback_ids: list[int]) -> list[str]:
    """Whose feedback an item rests on (of its marks still recorded), by name."""
    if not feedback_ids:
        return []
    marks = ", ".join("?" for _ in feedback_ids)
    return [r[0] for r in conn.execute(f"SELECT DISTINCT asker FROM query_feedback WHERE id IN ({marks}) "
                                       "ORDER BY asker", list(feedback_ids))]


def _quoted(asked: list[str], fallback: str) -> str:
    if not asked:
        return fallback
    head = f'"{asked[0]}"'
    more = len(asked) - 1
    return head + (f" and {more} more question{'s' if more > 1 else ''}" if more else "")


def _relation(conn: Connection, similarity_id: Any) -> str:
    row = conn.execute("SELECT a.display, b.display, s.similarity_type FROM keyword_similarities s "
                       "JOIN keywords a ON a.id = s.keyword_id_1 JOIN keywords b ON b.id = s.keyword_id_2 "
                       "WHERE s.id = ?", (similarity_id,)).fetchone()
    return f'"{row[0]}" {row[2]} "{row[1]}"' if row else f"relation {similarity_id} (since removed)"


def summary(conn: Connection, kind: str, detail: dict[str, Any], weight: float | None, asked: list[str]) -> str:
    """One line: what the item does, and for which questions."""
    if kind == "association":
        verdict = "lifts" if (weight or 0) > 0 else "lowers" if (weight or 0) < 0 else "no longer moves"
        terms = " ".join(detail.get("terms") or [])
        return f"{verdict} {detail.get('filepath')} for {_quoted(asked, 'questions with the terms ' + terms)}"
    if kind == "keyword":
        return f'tags {detail.get("filepath")} with "{detail.get("keyword")}" ({_quoted(asked, "earlier questions")})'
    if kind == "similarity" and detail.get("request") == "unrelate":
        return f'unrelates "{detail.get("keyword1")}" and "{detail.get("keyword2")}" ({detail.get("type") or "every type"})'
    if kind == "similarity":
        return f'relates "{detail.get("keyword1")}" and "{detail.get("keyword2")}" ({detail.get("type")})'
    if kind == "score":
        delta = detail.get("delta") or 0
        return f"{'raises' if delta > 0 else 'lowers'} the score of {_relation(conn, detail.get('similarity_id'))} " \
               f"by {abs(delta):g}"
    return str(detail.get("reason") or kind)
