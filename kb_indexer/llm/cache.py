"""The LLM answer cache, in the index's own SQLite file (table ``llm_cache``).

Key = sha256 of (backend, model, task, prompt hash, schema hash). The prompt
hash covers the messages and the generation settings (max tokens, temperature),
so changing any of them is a miss. Only validated answers are stored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kb_indexer.notices import warn
from kb_indexer.store.connection import has_table, transaction
from kb_indexer.store.errors import OperationalError
from kb_indexer.store.dbapi import Connection


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def digest(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode("utf-8")).hexdigest()


def cache_key(backend: str, model: str, task: str, prompt_hash: str, schema_hash: str) -> str:
    return hashlib.sha256("\x00".join((backend, model, task, prompt_hash, schema_hash)).encode()).hexdigest()


def _has_table(conn: Connection) -> bool:
    return has_table(conn, "llm_cache")


def get(conn: Connection, key: str) -> Any | None:
    """The cached answer (parsed JSON) or None; counts the hit."""
    row = conn.execute("SELECT response FROM llm_cache WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
    except json.JSONDecodeError:  # pragma: no cover - only a hand-edited row
        return None
    try:
        with transaction(conn):
            conn.execute("UPDATE llm_cache SET hits = hits + 1, "
                         "last_hit_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') WHERE key = ?", (key,))
    except OperationalError:  # a read-only or busy index: the hit still counts for the caller
        pass
    return value


def put(conn: Connection, key: str, *, backend: str, model: str, task: str, prompt_hash: str,
        schema_hash: str, response: Any) -> bool:
    """Store a validated answer; False when the index cannot be written (the answer is still used)."""
    try:
        _put(conn, key, backend, model, task, prompt_hash, schema_hash, response)
    except OperationalError as exc:
        warn(f"could not cache the LLM answer: {exc}")
        return False
    return True


def _put(conn: Connection, key: str, backend: str, model: str, task: str, prompt_hash: str,
         schema_hash: str, response: Any) -> None:
    with transaction(conn):
        conn.execute(
            "INSERT INTO llm_cache (key, backend, model, task, prompt_hash, schema_hash, response) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET response = excluded.response, "
            "created_at = strftime('%Y-%m-%dT%H:%M:%S', 'now')",
            (key, backend, model, task, prompt_hash, schema_hash, _canonical(response)),
        )


def stats(conn: Connection) -> dict[str, Any]:
    if not _has_table(conn):
        return {"entries": 0, "hits": 0, "bytes": 0, "by_task": [], "oldest": None, "newest": None}
    total = conn.execute("SELECT COUNT(*), COALESCE(SUM(hits), 0), COALESCE(SUM(LENGTH(response)), 0), "
                         "MIN(created_at), MAX(created_at) FROM llm_cache").fetchone()
    groups = [dict(r) for r in conn.execute(
        "SELECT task, backend, model, COUNT(*) AS entries, COALESCE(SUM(hits), 0) AS hits, "
        "MAX(COALESCE(last_hit_at, created_at)) AS last_used FROM llm_cache "
        "GROUP BY task, backend, model ORDER BY task, backend, model")]
    return {"entries": total[0], "hits": total[1], "bytes": total[2], "by_task": groups,
            "oldest": total[3], "newest": total[4]}


def clear(conn: Connection, *, task: str | None = None, backend: str | None = None,
          model: str | None = None) -> int:
    """Delete cached answers (all, or those matching every given filter); returns how many."""
    if not _has_table(conn):
        return 0
    where, args = [], []
    for column, value in (("task", task), ("backend", backend), ("model", model)):
        if value:
            where.append(f"{column} = ?")
            args.append(value)
    sql = "DELETE FROM llm_cache" + (" WHERE " + " AND ".join(where) if where else "")
    with transaction(conn):
        deleted: int = conn.execute(sql, args).rowcount
        return deleted
