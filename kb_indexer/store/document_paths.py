"""Moving a document to another path: its row (everything keyed by its id stays with it), and what
stores the path instead of the id (feedback, recorded query results, learned items' details). Used by
sync for renamed files (:mod:`kb_indexer.index.renames`); call inside the caller's transaction."""

from __future__ import annotations

import json
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.engine import is_postgres


def move_document(conn: Connection, old: str, new: str) -> None:
    """Give the document at ``old`` the path ``new`` (no document may be at ``new``)."""
    conn.execute("UPDATE documents SET filepath = ? WHERE filepath = ?", (new, old))


def follow_paths(conn: Connection, moved: dict[str, str]) -> None:
    """Feedback, recorded query results and learned items' details: from the old paths to the new ones."""
    if is_postgres(conn):
        _follow_paths_row_by_row(conn, moved)
        _follow_results(conn, moved)
        return
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


def _follow_paths_row_by_row(conn: Connection, moved: dict[str, str]) -> None:
    """PostgreSQL (no UPDATE OR REPLACE, other JSON functions): what follow_paths does on SQLite, by row.
    A feedback row already at a new path, for the same query, is replaced by the renamed document's."""
    olds = json.dumps(list(moved))
    for fid, qid, old in conn.execute("SELECT id, query_id, filepath FROM query_feedback WHERE filepath IN "
                                      "(SELECT value FROM json_each(?)) ORDER BY id", (olds,)).fetchall():
        conn.execute("DELETE FROM query_feedback WHERE query_id = ? AND filepath = ?", (qid, moved[old]))
        conn.execute("UPDATE query_feedback SET filepath = ? WHERE id = ?", (moved[old], fid))
    for lid, text in conn.execute("SELECT id, detail FROM learned_items WHERE detail LIKE '%\"filepath\"%'").fetchall():
        try:
            detail = json.loads(text)
        except ValueError:
            continue
        if isinstance(detail, dict) and detail.get("filepath") in moved:
            detail["filepath"] = moved[detail["filepath"]]
            conn.execute("UPDATE learned_items SET detail = ? WHERE id = ?",
                         (json.dumps(detail, ensure_ascii=False, separators=(",", ":")), lid))


# The attempts whose recorded results name a moved path: SQLite's and PostgreSQL's JSON functions.
_ATTEMPTS_NAMING = (
    "SELECT a.id, a.top_results FROM query_attempts a WHERE EXISTS (SELECT 1 FROM "
    "json_each(CASE WHEN json_valid(a.top_results) THEN a.top_results ELSE '[]' END) r "
    "WHERE CASE WHEN r.type = 'object' THEN json_extract(r.value, '$.filepath') END IN "
    "(SELECT value FROM json_each(?)))")
_PG_ATTEMPTS_NAMING = (
    "SELECT a.id, a.top_results FROM query_attempts a WHERE EXISTS (SELECT 1 FROM "
    "json_array_elements(CASE WHEN json_typeof(kb_json(a.top_results)) = 'array' THEN kb_json(a.top_results) "
    "ELSE '[]' END) r "
    "WHERE CASE WHEN json_typeof(r) = 'object' THEN r ->> 'filepath' END IN (SELECT value FROM json_each(?)))")


def _follow_results(conn: Connection, moved: dict[str, str]) -> None:
    sql = _PG_ATTEMPTS_NAMING if is_postgres(conn) else _ATTEMPTS_NAMING
    rows = conn.execute(sql, (json.dumps(list(moved)),)).fetchall()
    for attempt_id, text in rows:
        results = json.loads(text)
        for r in results:
            if isinstance(r, dict) and r.get("filepath") in moved:
                r["filepath"] = moved[r["filepath"]]
        conn.execute("UPDATE query_attempts SET top_results = ? WHERE id = ?",
                     (json.dumps(results, ensure_ascii=False, separators=(",", ":")), attempt_id))
