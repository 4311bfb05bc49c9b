"""`learn --dry-run`'s preview: what the planned items would change for the recorded questions they rest on.

Computed for real: the items are applied in one transaction, each affected question is searched before and after
(nothing recorded), and the transaction is rolled back, so nothing is written."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from kb_indexer.learn import policy, wording
from kb_indexer.learn.apply import apply_items, learn, plan
from kb_indexer.learn.learner import analyse, load_events
from kb_indexer.search.options import QueryOptions
from kb_indexer.store.connection import exclusive, rolled_back
from kb_indexer.store.dbapi import Connection

TOP = 5             # results shown before and after, per question
MAX_QUESTIONS = 20  # affected questions searched at most (the first recorded)

Query = Callable[..., Mapping[str, Any]]


def preview(conn: Connection, query: Query, reprocess: bool = False) -> dict[str, Any]:
    """``learn(dry_run=True)``'s result, with ``changes``: per affected recorded question its top results
    before and after the planned items (under the review policy: as if approved), and each document's rank move."""
    with exclusive(conn, "learn"), rolled_back(conn):
        result = learn(conn, dry_run=True, reprocess=reprocess)
        todo = plan(conn, analyse(conn, load_events(conn), learning_policy=policy.read(conn)))
        asked = list(dict.fromkeys(q for item in todo for q in wording.questions(conn, item["feedback_ids"])))
        asked = asked[:MAX_QUESTIONS]
        before = {q: _top(query, q) for q in asked}
        apply_items(conn, todo)
        changes = [_change(q, before[q], _top(query, q)) for q in asked]
    result["changes"] = [c for c in changes if c["before"] != c["after"]]
    return result


def _top(query: Query, question: str) -> list[dict[str, Any]]:
    res = query(question, None, QueryOptions(record=False))
    return [{"filepath": r["filepath"], "score": r["relevance_score"]} for r in res["results"][:TOP]]


def _change(question: str, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    was = {r["filepath"]: i + 1 for i, r in enumerate(before)}
    now = {r["filepath"]: i + 1 for i, r in enumerate(after)}
    moves = [{"filepath": p, "from": was.get(p), "to": now.get(p)} for p in dict.fromkeys([*now, *was])
             if was.get(p) != now.get(p)]
    return {"question": question, "before": before, "after": after, "rank_changes": moves}
