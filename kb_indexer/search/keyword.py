"""Exact keyword-tag search (``kbindex search``)."""

from __future__ import annotations

import json
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.limits import MAX_ID, check_keyword, check_limit
from kb_indexer.defaults import SEARCH_DEFAULT_LIMIT
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection


def keyword_search(conn: Connection, keywords: list[str], mode: str = "or",
                   limit: int | None = SEARCH_DEFAULT_LIMIT) -> dict[str, Any]:
    """Documents tagged with the keywords; more matched keywords rank first, then path order.

    ``limit`` (default ``SEARCH_DEFAULT_LIMIT``; 0 or None: all) bounds the results; ``total`` counts all
    matches. Ranking, counting and the cut happen in SQL, so a tag on 50,000 documents costs no Python
    object per document.
    """
    if mode not in ("or", "and"):
        raise UsageError("mode must be 'or' or 'and'")
    limit = check_limit(limit)
    users: dict[str, list[str]] = {}
    for kw in keywords:
        norm = normalize_keyword(check_keyword(kw))
        if norm:
            users.setdefault(norm, []).append(kw)
    if not users:
        raise UsageError("give at least one non-empty keyword")
    ids = {r["keyword"]: r["id"] for r in conn.execute(
        "SELECT id, keyword FROM keywords WHERE keyword IN (SELECT value FROM json_each(?))", (json.dumps(list(users)),))}
    results, total = _ranked_documents(conn, ids, users, mode, limit)
    return {
        "query": {"keywords": keywords, "mode": "exact" if len(users) == 1 else mode},
        "results": results,
        "count": len(results),
        "total": total,
    }


def _ranked_documents(conn: Connection, ids: dict[str, int], users: dict[str, list[str]], mode: str,
                      limit: int | None) -> tuple[list[dict[str, Any]], int]:
    if not ids or (mode == "and" and len(ids) < len(users)):
        return [], 0
    kid_list = json.dumps(sorted(ids.values()))
    matched = ("SELECT document_id AS d, count(*) AS n FROM document_keywords "
               "WHERE keyword_id IN (SELECT value FROM json_each(?)) GROUP BY document_id")
    args: tuple[object, ...] = (kid_list,)
    if mode == "and":
        matched += " HAVING count(*) = ?"
        args = (kid_list, len(ids))
    total = conn.execute(f"SELECT count(*) FROM ({matched})", args).fetchone()[0]
    rows = conn.execute(f"SELECT d.id, d.filepath, d.title, d.summary FROM ({matched}) m JOIN documents d "
                        "ON d.id = m.d ORDER BY m.n DESC, d.filepath LIMIT ?", (*args, limit or MAX_ID)).fetchall()
    docs = {r["id"]: {"filepath": r["filepath"], "title": r["title"], "summary": r["summary"],
                      "matched_keywords": [], "user_keywords": []} for r in rows}
    for doc_id, keyword in conn.execute(
            "SELECT dk.document_id, k.keyword FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
            "WHERE dk.document_id IN (SELECT value FROM json_each(?)) AND dk.keyword_id IN "
            "(SELECT value FROM json_each(?)) ORDER BY dk.id", (json.dumps(list(docs)), kid_list)):
        d = docs[doc_id]
        d["matched_keywords"].append(keyword)
        for original in users[keyword]:
            if original not in d["user_keywords"]:
                d["user_keywords"].append(original)
    return [docs[r["id"]] for r in rows], total
