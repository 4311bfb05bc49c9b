"""Exact keyword-tag search (``kbindex search``)."""

from __future__ import annotations

import sqlite3
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.text import normalize_keyword


def keyword_search(conn: sqlite3.Connection, keywords: list[str], mode: str = "or",
                   limit: int | None = None) -> dict[str, Any]:
    """Documents tagged with the keywords; more matched keywords rank first, then path order."""
    if mode not in ("or", "and"):
        raise UsageError("mode must be 'or' or 'and'")
    users: dict[str, list[str]] = {}
    for kw in keywords:
        norm = normalize_keyword(kw)
        if norm:
            users.setdefault(norm, []).append(kw)
    if not users:
        raise UsageError("give at least one non-empty keyword")
    ids = {r["keyword"]: r["id"] for r in conn.execute(
        f"SELECT id, keyword FROM keywords WHERE keyword IN ({','.join('?' * len(users))})", list(users))}
    docs: dict[int, dict[str, Any]] = {}
    if ids:
        rows = conn.execute(
            "SELECT d.id, d.filepath, d.title, d.summary, k.keyword FROM document_keywords dk "
            "JOIN documents d ON d.id = dk.document_id JOIN keywords k ON k.id = dk.keyword_id "
            f"WHERE dk.keyword_id IN ({','.join('?' * len(ids))}) ORDER BY dk.id",
            list(ids.values()),
        )
        for r in rows:
            d = docs.setdefault(r["id"], {"filepath": r["filepath"], "title": r["title"], "summary": r["summary"],
                                          "matched_keywords": [], "user_keywords": []})
            d["matched_keywords"].append(r["keyword"])
            for original in users[r["keyword"]]:
                if original not in d["user_keywords"]:
                    d["user_keywords"].append(original)
    results = list(docs.values())
    if mode == "and":
        results = [d for d in results if len(d["matched_keywords"]) == len(users)]
    results.sort(key=lambda d: (-len(d["matched_keywords"]), d["filepath"]))
    if limit is not None:
        results = results[:limit]
    single = len(users) == 1
    return {
        "query": {"keywords": keywords, "mode": "exact" if single else mode},
        "results": results,
        "count": len(results),
    }
