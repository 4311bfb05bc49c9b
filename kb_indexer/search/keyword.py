"""Exact keyword-tag search (``kbindex search``)."""

from __future__ import annotations

import json
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.search import rules
from kb_indexer.limits import MAX_ID, check_keyword, check_limit
from kb_indexer.defaults import SEARCH_DEFAULT_LIMIT
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection


def keyword_search(conn: Connection, keywords: list[str], mode: str = "or",
                   limit: int | None = SEARCH_DEFAULT_LIMIT) -> dict[str, Any]:
    """Documents tagged with the keywords; more matched keywords rank first, then path order.

    ``limit`` (default ``SEARCH_DEFAULT_LIMIT``; 0 or None: all) bounds the results; ``total`` counts all
    matches. Ranking, counting and the cut happen in SQL, so a tag on 50,000 documents costs no Python
    object per document. The pin and hide rules that fire for the keywords apply (:mod:`.rules`): pinned
    documents first, hidden ones left out (``hidden_by_rules`` lists those the keywords matched).
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
    fired = rules.fired(conn, " ".join(keywords))
    results, total = _ranked_documents(conn, ids, users, mode, limit, fired)
    out: dict[str, Any] = {
        "query": {"keywords": keywords, "mode": "exact" if len(users) == 1 else mode},
        "results": results,
        "count": len(results),
        "total": total,
    }
    if fired is not None and fired.hidden:
        out["hidden_by_rules"] = fired.hidden
    return out


def _ranked_documents(conn: Connection, ids: dict[str, int], users: dict[str, list[str]], mode: str,
                      limit: int | None, fired: rules.Fired | None = None) -> tuple[list[dict[str, Any]], int]:
    matches = bool(ids) and not (mode == "and" and len(ids) < len(users))
    rows, total = _matched(conn, ids, mode, limit, fired) if matches else ([], 0)
    if fired is not None and fired.pins:   # pinned documents first, matched or not
        pins = {r["id"]: r for r in conn.execute("SELECT id, filepath, title, summary FROM documents WHERE id IN "
                                                 "(SELECT value FROM json_each(?))", (json.dumps(list(fired.pins)),))}
        rows = ([pins[d] for d in fired.pins if d in pins] + rows)[:limit or None]
        total += len(pins)
    kid_list = json.dumps(sorted(ids.values()))
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
    results = [docs[r["id"]] for r in rows]
    if fired is not None:
        rules.annotate(fired, results)
    return results, total


def _matched(conn: Connection, ids: dict[str, int], mode: str, limit: int | None,
             fired: rules.Fired | None) -> tuple[list[Any], int]:
    """The documents tagged with the keywords (all of them with ``and``), most matched first, and how many; the
    documents the rules place left out (the hidden ones the keywords matched noted in ``fired.hidden``)."""
    kid_list = json.dumps(sorted(ids.values()))
    matched = ("SELECT document_id AS doc_id, count(*) AS n FROM document_keywords "
               "WHERE keyword_id IN (SELECT value FROM json_each(?)) GROUP BY document_id")
    args: tuple[object, ...] = (kid_list,)
    if mode == "and":
        matched += " HAVING count(*) = ?"
        args = (kid_list, len(ids))
    if fired is not None:
        _note_hidden(conn, fired, matched, args)
        matched = f"SELECT * FROM ({matched}) h WHERE NOT (h.doc_id IN (SELECT value FROM json_each(?)))"
        args = (*args, json.dumps([*fired.pins, *fired.hides]))
    total = conn.execute(f"SELECT count(*) FROM ({matched}) t", args).fetchone()[0]
    rows = conn.execute(f"SELECT d.id, d.filepath, d.title, d.summary FROM ({matched}) m JOIN documents d "
                        "ON d.id = m.doc_id ORDER BY m.n DESC, d.filepath LIMIT ?", (*args, limit or MAX_ID)).fetchall()
    return list(rows), int(total)


def _note_hidden(conn: Connection, fired: rules.Fired, matched: str, args: tuple[object, ...]) -> None:
    """The hidden documents the keywords matched, in ``fired.hidden`` (``hidden_by_rules``)."""
    if not fired.hides:
        return
    hit = {r[0] for r in conn.execute(f"SELECT h.doc_id FROM ({matched}) h WHERE h.doc_id IN (SELECT value FROM json_each(?))",
                                      (*args, json.dumps(list(fired.hides))))}
    fired.hidden += [{"filepath": r["filepath"], "rule_id": r["id"]} for d, r in fired.hides.items() if d in hit]
