"""``kbindex similar``: a keyword's relations, the strongest first, at most ``limit`` of them.

Without a user context the cut happens in SQL (a keyword with 50,000 relations reads the rows it shows and a
count); with one, every relation is judged (:mod:`.context_match`) and the best-fitting ``limit`` are kept.
``total`` counts them all either way.
"""

from __future__ import annotations

from typing import Any

from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD, SIMILAR_DEFAULT_LIMIT
from kb_indexer.limits import check_limit
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.similarities import count_neighbours, neighbours


def similar(conn: Connection, keyword_id: int, display: str, sim_type: str | None = None,
            user_context: str | None = None, context_threshold: float = DEFAULT_CONTEXT_THRESHOLD,
            llm: Any = None, limit: int | None = SIMILAR_DEFAULT_LIMIT) -> dict[str, Any]:
    """The relations of keyword ``keyword_id`` (shown as ``display``), of ``sim_type`` if given; with
    ``user_context``, only those whose context fits it (``llm``: :class:`kb_indexer.llm.config.LLMOptions`).
    ``limit`` 0 or None: all."""
    limit = check_limit(limit)
    if user_context is not None:
        # lazy: the LLM client stays off the cold path
        from kb_indexer.search.context_match import similar_in_context
        out = similar_in_context(conn, display, neighbours(conn, keyword_id, sim_type), user_context,
                                 context_threshold, llm)
        fitting = out.pop("similar_keywords")
        shown = fitting[:limit] if limit else fitting
        return {"keyword": out.pop("keyword"), "user_context": out.pop("user_context"), "similar_keywords": shown,
                **out, "count": len(shown), "total": len(fitting)}
    items = [{
        "keyword": r["keyword"], "similarity_type": r["similarity_type"], "context": r["context"],
        "score": r["score"], "directional": r["directional"], "direction": r["direction"],
    } for r in neighbours(conn, keyword_id, sim_type, limit)]
    total = count_neighbours(conn, keyword_id, sim_type) if limit and len(items) == limit else len(items)
    return {"keyword": display, "similar_keywords": items, "count": len(items), "total": total}
