"""The ``meta`` table: the key-value facts the index keeps about itself (the knowledge-base root, the
skills version, the files the last sync saw, imported or rejected).

Every statement on the table is here; callers name the keys (``tests/store/test_meta_table_has_one_writer.py``
checks no other module writes SQL for it). Writes happen inside the caller's transaction.
"""

from __future__ import annotations

import json
from typing import Any
from kb_indexer.store.dbapi import Connection

#: A key prefix matches exactly (no LIKE wildcards, case-sensitive): the keys hold file paths.
_PREFIX_SQL = "substr(key, 1, length(?)) = ?"


def get(conn: Connection, key: str) -> str | None:
    """The value stored under ``key``, or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def has(conn: Connection, key: str) -> bool:
    """Whether a value is stored under ``key``, without reading it (a large value costs nothing here)."""
    return conn.execute("SELECT 1 FROM meta WHERE key = ? AND value IS NOT NULL", (key,)).fetchone() is not None


def put(conn: Connection, key: str, value: str) -> None:
    """Store ``value`` under ``key`` (replacing what was there)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 (key, value))


def delete(conn: Connection, *keys: str) -> None:
    """Forget ``keys`` (absent ones are fine)."""
    conn.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k in keys])


def get_json(conn: Connection, key: str) -> dict[str, Any]:
    """The JSON object stored under ``key``; ``{}`` when absent, unreadable or not an object."""
    text = get(conn, key)
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def put_json(conn: Connection, key: str, value: dict[str, Any]) -> None:
    """Store a JSON object under ``key`` (sorted keys, compact)."""
    put(conn, key, json.dumps(value, sort_keys=True, separators=(",", ":")))


def increment(conn: Connection, key: str) -> None:
    """Add one to the counter under ``key`` (absent: it becomes 1)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE "
                 "SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)", (key,))


def with_prefixes(conn: Connection, *prefixes: str) -> dict[str, str]:
    """``{key: value}`` of every key starting with one of ``prefixes``."""
    out: dict[str, str] = {}
    for prefix in prefixes:
        rows = conn.execute(f"SELECT key, value FROM meta WHERE {_PREFIX_SQL}", (prefix, prefix)).fetchall()
        out.update((str(k), str(v)) for k, v in rows)
    return out


def delete_prefixes(conn: Connection, *prefixes: str) -> None:
    """Forget every key starting with one of ``prefixes``."""
    conn.executemany(f"DELETE FROM meta WHERE {_PREFIX_SQL}", [(p, p) for p in prefixes])
