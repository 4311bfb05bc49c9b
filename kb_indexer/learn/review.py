"""The review queue and undo of learned items: pending items approved (applied exactly as `learn` under the
``auto`` policy would have) or rejected (never proposed again), and removed items restored."""

from __future__ import annotations

from typing import Any

from kb_indexer.errors import NotFoundError, UsageError
from kb_indexer.learn.apply import apply_items, drop_learned_tag, learn_now, stored_item
from kb_indexer.store.connection import exclusive, transaction
from kb_indexer.learn.learner import inactive
from kb_indexer.learn.requests import apply_request, is_request
from kb_indexer.store.team import current_asker, owns
from kb_indexer.store.dbapi import Connection, Row
from kb_indexer.store.documents import refresh_fts_keywords

_NOW = "strftime('%Y-%m-%dT%H:%M:%S', 'now')"


def _who(conn: Connection) -> str:
    """Who is deciding: the asker of this connection (kb_indexer.store.team)."""
    return current_asker(conn)


def _rows(conn: Connection, ids: list[int], status: str) -> tuple[list[Row], list[int]]:
    """The items of these ids (each once, in id order) that have ``status``, and the ids of the others."""
    if not ids:
        raise UsageError("give learned item ids (see `kbindex learned list`)")
    rows: list[Row] = []
    other: list[int] = []
    for i in sorted(set(ids)):
        r = conn.execute("SELECT * FROM learned_items WHERE id = ?", (i,)).fetchone()
        if r is None:
            raise NotFoundError(f"No learned item {i} (see `kbindex learned list`)")
        if r["status"] == status:
            rows.append(r)
        else:
            other.append(i)
    return rows, other


def approve(conn: Connection, ids: list[int]) -> dict[str, Any]:
    """Make pending items active, applied in the order `learn` recorded them (as under auto)."""
    with exclusive(conn, "learn"), transaction(conn):
        rows, other = _rows(conn, ids, "pending")
        apply_items(conn, [stored_item(r) for r in rows if not is_request(r["key"])])
        for r in rows:
            if is_request(r["key"]):
                apply_request(conn, r)
        _decided(conn, rows, "active")
    return {"approved": [r["id"] for r in rows], "count": len(rows), "not_pending": other}


def reject(conn: Connection, ids: list[int]) -> dict[str, Any]:
    """Mark pending items rejected: `learn` does not propose them (their key) again."""
    with transaction(conn):
        rows, other = _rows(conn, ids, "pending")
        _decided(conn, rows, "rejected")
    return {"rejected": [r["id"] for r in rows], "count": len(rows), "not_pending": other}


def _decided(conn: Connection, rows: list[Row], status: str) -> None:
    who = _who(conn)
    conn.executemany(f"UPDATE learned_items SET status = ?, decided_by = ?, decided_at = {_NOW}, "
                     f"updated_at = {_NOW} WHERE id = ?", [(status, who, r["id"]) for r in rows])


def restore(conn: Connection, ids: list[int]) -> dict[str, Any]:
    """Bring removed items back: applied again as they were learned, and learned again by later runs."""
    with exclusive(conn, "learn"), transaction(conn):
        rows, other = _rows(conn, ids, "removed")
        apply_items(conn, [stored_item(r) for r in rows])
        conn.executemany(f"UPDATE learned_items SET status = 'active', removed_by = NULL, removed_at = NULL, "
                         f"updated_at = {_NOW} WHERE id = ?", [(r["id"],) for r in rows])
    return {"restored": [r["id"] for r in rows], "count": len(rows), "not_removed": other}


def learned_remove(conn: Connection, ids: list[int] | None = None, all_: bool = False) -> dict[str, Any]:
    """Undo learned items; they are kept as 'removed' (with who removed them, and when) so that `learn` does not
    learn them again until they are restored."""
    if not ids and not all_:
        raise UsageError("give learned item ids or --all")
    with transaction(conn):
        already: list[int] = []
        if all_:
            rows = conn.execute("SELECT * FROM learned_items WHERE status = 'active'").fetchall()
        else:
            rows, already = _rows(conn, ids or [], "active")
        for r in rows:
            _undo(conn, r)
        who = _who(conn)
        conn.executemany(f"UPDATE learned_items SET status = 'removed', removed_by = ?, removed_at = {_NOW}, "
                         f"updated_at = {_NOW} WHERE id = ?", [(who, r["id"]) for r in rows])
    return {"removed": [r["id"] for r in rows], "count": len(rows), "already_removed": already}


def _undo(conn: Connection, r: Row) -> None:
    if r["kind"] == "association":
        conn.execute("DELETE FROM learned_terms WHERE learned_id = ?", (r["id"],))
    elif r["kind"] == "keyword":
        drop_learned_tag(conn, r["id"], r["document_id"])
        if r["document_id"] is not None:
            refresh_fts_keywords(conn, r["document_id"])
    elif r["kind"] == "similarity" and r["similarity_id"] is not None:
        conn.execute("DELETE FROM keyword_similarities WHERE id = ? AND origin_kind = 'learned'", (r["similarity_id"],))
    elif r["kind"] == "score" and r["similarity_id"] is not None and r["previous_score"] is not None:
        # Only undo our own change: a score a person set since stays theirs.
        conn.execute("UPDATE keyword_similarities SET score = ? WHERE id = ? AND abs(score - ?) < 1e-9",
                     (r["previous_score"], r["similarity_id"], r["weight"] if r["weight"] is not None else -1))


def remove_asker(conn: Connection, name: str) -> dict[str, Any]:
    """Undo one asker's influence: their marks are kept, marked excluded, and `learn` runs on the rest at once.
    What rests only on their marks is withdrawn (as if they had never marked), what others support too is learned
    again from the others' marks alone; pending items lose their part of the evidence the same way."""
    if not name.strip():
        raise UsageError("give the asker's name, as `kbindex history` shows it")
    with exclusive(conn, "learn"), transaction(conn):
        ids = [int(r[0]) for r in conn.execute("SELECT id, asker FROM query_feedback WHERE excluded = 0")
               if owns(conn, r[1], name)]
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            conn.execute(f"UPDATE query_feedback SET excluded = 1 WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        learned = learn_now(conn) if ids else None
    changes = learned["suggestions"] if learned else []
    return {"asker": name, "feedback_excluded": len(ids),
            "withdrawn": sum(1 for c in changes if inactive(c)),
            "relearned": sum(1 for c in changes if not inactive(c)), "changes": changes}
