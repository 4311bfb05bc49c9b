"""Smart learning: full text found it, the keywords did not.

A query's keywords (given, or known keywords found in its question) that are none of the tags of a
document the query found by full text alone (its result had no keyword or expansion evidence), and
that a person marked helpful, become learned tags of that document, under the usual evidence rule of
:mod:`kb_indexer.learn.learner`: at least ``min_queries`` independent queries, net of queries that marked
the document not helpful. The items share the key space of the other learned tags (``keyword:<doc>:<kw>``),
so they are listed, reconciled, withdrawn and undone (``kbindex learned remove``) like them.
"""

from __future__ import annotations

import json
from typing import Any

from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection


def _fulltext_only_hits(conn: Connection) -> dict[int, tuple[list[str], set[str]]]:
    """feedback id -> (the attempt's keywords, the files it found by full text alone)."""
    out: dict[int, tuple[list[str], set[str]]] = {}
    for fid, keywords, top in conn.execute(
            "SELECT f.id, a.keywords, a.top_results FROM query_feedback f JOIN query_attempts a "
            "ON a.id = f.attempt_id"):
        try:
            kws, results = json.loads(keywords or "[]"), json.loads(top or "[]")
        except json.JSONDecodeError:
            continue
        kws = [normalize_keyword(k) for k in kws if isinstance(k, str) and normalize_keyword(k)]
        only = {r["filepath"] for r in results
                if isinstance(r, dict) and isinstance(r.get("filepath"), str) and _fulltext_only(r.get("sources"))}
        if kws and only:
            out[fid] = (kws, only)
    return out


def _fulltext_only(sources: Any) -> bool:
    """Full text found the result and no keyword did (a learned lift, from this question or a similar one,
    is no keyword evidence)."""
    return isinstance(sources, list) and "fulltext" in sources and not {"keyword", "expansion"} & set(sources)


def smart_tags(conn: Connection, events: list[Any], doc_kw: dict[int, set[str]], min_queries: int,
               have: set[str]) -> list[dict[str, Any]]:
    """Learned-tag items for query keywords that full-text-only helpful hits lack."""
    hits = _fulltext_only_hits(conn)
    evidence: dict[tuple[str, int], dict[str, Any]] = {}
    for e in events:
        kws, only = hits.get(e.feedback_id, ([], set()))
        if e.filepath not in only or set(kws) & doc_kw[e.doc_id]:
            continue
        for k in kws:
            a = evidence.setdefault((k, e.doc_id), {"h": set(), "n": set(), "fb": [], "filepath": e.filepath})
            (a["h"] if e.helpful else a["n"]).add(e.query_id)
            a["fb"].append(e.feedback_id)
    items = []
    for (k, doc_id), a in sorted(evidence.items()):
        key = f"keyword:{doc_id}:{k}"
        net = len(a["h"]) - len(a["n"])
        if key in have or not a["h"]:
            continue
        weight = round(min(1.0, 0.5 + 0.15 * net), 4) if net >= min_queries else 0.0
        items.append({"kind": "keyword", "key": key, "document_id": doc_id, "filepath": a["filepath"],
                      "keyword": k, "evidence": len(a["h"]), "against": len(a["n"]), "weight": weight,
                      "feedback_ids": sorted(a["fb"]),
                      "reason": f"{len(a['h'])} queries with '{k}' found this helpful document by full text "
                                "only: it is not tagged with it"})
    return items

