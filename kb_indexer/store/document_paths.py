"""Moving a document to another path: its row (everything keyed by its id stays with it), and what
stores the path instead of the id (feedback, recorded query results, learned items' details). Used by
sync for renamed files (:mod:`kb_indexer.index.renames`); call inside the caller's transaction."""

from __future__ import annotations

import json
from kb_indexer.store.dbapi import Connection


def move_document(conn: Connection, old: str, new: str) -> None:
    """Give the document at ``old`` the path ``new`` (no document may be at ``new``)."""
    conn.execute("UPDATE documents SET filepath = ? WHERE filepath = ?", (new, old))


def follow_paths(conn: Connection, moved: dict[str, str]) -> None:
    """Feedback, recorded query results and learned items' details: from the old paths to the new ones."""
    mapping = json.dumps([[old, new] for old, new in moved.items()])
    pairs = "(SELECT json_extract(value, '$[0]') AS old, json_extract(value, '$[1]') AS new FROM json_each(?))"
    # A feedback row already on a new path is about an earlier document that was removed from there:
    # the renamed document's own feedback replaces it (UNIQUE(query_id, filepath)).
    conn.execute(f"UPDATE OR REPLACE query_feedback SET filepath = (SELECT new FROM {pairs} WHERE old = filepath) "
                 f"WHERE filepath IN (SELECT old FROM {pairs})", (mapping, mapping))
    detail_path = "CASE WHEN json_valid(detail) THEN json_extract(detail, '$.filepath') END"
    conn.execute(f"UPDATE learned_items SET detail = json_set(detail, '$.filepath', "
                 f"(SELECT new FROM {pairs} WHERE old = {detail_path})) "
                 f"WHERE {detail_path} IN (SELECT old FROM {pairs})", (mapping, mapping))
    _follow_results(conn, moved)


def _follow_results(conn: Connection, moved: dict[str, str]) -> None:
    results_of = "json_each(CASE WHEN json_valid(a.top_results) THEN a.top_results ELSE '[]' END)"
    rows = conn.execute(
        f"SELECT a.id, a.top_results FROM query_attempts a WHERE EXISTS (SELECT 1 FROM {results_of} r "
        "WHERE CASE WHEN r.type = 'object' THEN json_extract(r.value, '$.filepath') END IN "
        "(SELECT value FROM json_each(?)))", (json.dumps(list(moved)),)).fetchall()
    for attempt_id, text in rows:
        results = json.loads(text)
        for r in results:
            if isinstance(r, dict) and r.get("filepath") in moved:
                r["filepath"] = moved[r["filepath"]]
        conn.execute("UPDATE query_attempts SET top_results = ? WHERE id = ?",
                     (json.dumps(results, ensure_ascii=False, separators=(",", ":")), attempt_id))
