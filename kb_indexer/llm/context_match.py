"""Context matching: how well does each keyword relation fit the user's context?

One batched, cached LLM call scores every candidate relation of a keyword
(keyword, related keyword, type, stored context, stored score) against the
user's context. The model answers an integer 0..10 per numbered relation (an
``enum`` in the schema, so grammar-constrained servers cannot go out of range)
and ``context_match_score`` is that number / 10. ``contrast`` relations are
rated low by instruction.

Without a working LLM (backend ``none``, server down, bad answer) the scores
come from :func:`lexical_scores`, a word-overlap measure, and the ``llm``
report says ``"used": false, "fallback": "lexical"`` with the error.

For other features (``query --context``)::

    scores, info = score_contexts(conn, "game AI", candidates, opts=LLMOptions(...))

``candidates`` are dicts with ``id``, ``keyword`` (the related keyword),
``similarity_type``, ``context``, ``score`` and optionally ``source`` (the
keyword they relate to). ``scores`` maps each id to 0..1; ``info`` is
``{"llm": {...}, "cache": {"hits", "misses"}}``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.llm.base import LLMError, Message
from kb_indexer.llm.config import LLMOptions

TASK = "context_match"
MAX_PER_CALL = 40          # more candidates than this are scored in several calls
SCALE = 10
CONTRAST_LEXICAL_FACTOR = 0.5

SYSTEM_PROMPT = (
    "You judge whether keyword relations from a knowledge base fit a user's context.\n"
    "For each numbered relation, give an integer rating from 0 to 10: 10 = the relation is exactly "
    "what the user means in their context, 5 = loosely related, 0 = irrelevant or misleading there.\n"
    "Judge by the relation type and by its stored context (which says when the relation applies), "
    "compared with the user's context.\n"
    "Relations of type 'contrast' link opposing or competing concepts: rate them 0 to 2 unless the "
    "user's context is explicitly about comparing or contrasting them.\n"
    "Rate every relation, each once."
)


def _line(i: int, c: dict[str, Any], keyword: str | None) -> str:
    source = c.get("source") or keyword or "?"
    stored = c.get("score")
    stored_txt = f"; stored score {float(stored):.2f}" if isinstance(stored, (int, float)) else ""
    return (f"{i}. \"{source}\" -> \"{c['keyword']}\" (type: {c['similarity_type']}{stored_txt})\n"
            f"   stored context: {str(c.get('context') or '').strip()}")


def build_messages(user_context: str, candidates: list[dict[str, Any]], keyword: str | None = None) -> list[Message]:
    lines = "\n".join(_line(i + 1, c, keyword) for i, c in enumerate(candidates))
    head = f"Keyword: {keyword}\n" if keyword else ""
    user = (f"User context: {user_context.strip()}\n{head}Relations:\n{lines}\n\n"
            f"Answer with a JSON object mapping each relation number (\"1\" to \"{len(candidates)}\") "
            f"to its rating from 0 to 10.")
    return [Message("system", SYSTEM_PROMPT), Message("user", user)]


def schema_for(n: int) -> dict[str, Any]:
    keys = [str(i + 1) for i in range(n)]
    rating = {"type": "integer", "enum": list(range(SCALE + 1))}
    return {"type": "object", "properties": {k: rating for k in keys}, "required": keys,
            "additionalProperties": False}


def max_tokens_for(n: int) -> int:
    return 24 + 10 * n


# -- lexical fallback ----------------------------------------------------------------------

def lexical_score(user_context: str, candidate: dict[str, Any], keyword: str | None = None) -> float:
    """Share of the user context's words found in the relation's keywords and stored context
    (the same measure as ``query --context``); contrast relations are scored down."""
    from kb_indexer.search.context import context_overlap

    score = context_overlap(user_context, candidate, keyword or "") or 0.0
    if candidate.get("similarity_type") == "contrast":
        score *= CONTRAST_LEXICAL_FACTOR
    return round(score, 3)


def lexical_scores(user_context: str, candidates: list[dict[str, Any]], keyword: str | None = None) -> dict[Any, float]:
    return {c["id"]: lexical_score(user_context, c, keyword) for c in candidates}


# -- the scorer ----------------------------------------------------------------------------


def score_contexts(conn: sqlite3.Connection | None, user_context: str, candidates: list[dict[str, Any]], *,
                   keyword: str | None = None, opts: LLMOptions | None = None,
                   client: Any = None) -> tuple[dict[Any, float], dict[str, Any]]:
    """Score every candidate 0..1 against ``user_context``: one LLM call per batch, else lexical.

    Raises ``UsageError`` only for bad settings (unknown backend); every LLM
    failure becomes the lexical fallback, reported in ``info["llm"]``.
    """
    from kb_indexer.llm.structured import LLMClient

    own = client is None
    if own:
        client = LLMClient.from_options(opts, conn)
    if not candidates:
        return {}, {"llm": client.report(used=False), "cache": client.cache_report()}
    if not client.enabled:
        return (lexical_scores(user_context, candidates, keyword),
                {"llm": client.report(used=False, fallback="lexical", error="LLM disabled (backend 'none')"),
                 "cache": client.cache_report()})
    scores: dict[Any, float] = {}
    try:
        for start in range(0, len(candidates), MAX_PER_CALL):
            batch = candidates[start:start + MAX_PER_CALL]
            result = client.structured(TASK, build_messages(user_context, batch, keyword), schema_for(len(batch)),
                                       max_tokens=max_tokens_for(len(batch)), temperature=0.0)
            for i, c in enumerate(batch):
                scores[c["id"]] = round(int(result.data[str(i + 1)]) / SCALE, 3)
    except LLMError as exc:
        return (lexical_scores(user_context, candidates, keyword),
                {"llm": client.report(used=False, fallback="lexical", error=exc.message),
                 "cache": client.cache_report()})
    finally:
        if own:
            client.close()
    return scores, {"llm": client.report(used=True), "cache": client.cache_report()}


def similar_in_context(conn: sqlite3.Connection, keyword: str, relations: list[dict[str, Any]], user_context: str,
                       threshold: float = 0.7, opts: LLMOptions | None = None, client: Any = None) -> dict[str, Any]:
    """``kbindex similar KEYWORD --user-context ...``: the relations whose context fits, best first."""
    if not isinstance(user_context, str) or not user_context.strip():
        raise UsageError("--user-context must not be empty")
    if not 0.0 <= float(threshold) <= 1.0:
        raise UsageError(f"--context-threshold must be between 0 and 1, got {threshold}")
    candidates = [{"id": r["id"], "keyword": r["keyword"], "source": keyword, "similarity_type": r["similarity_type"],
                   "context": r["context"], "score": r["score"]} for r in relations]
    scores, info = score_contexts(conn, user_context, candidates, keyword=keyword, opts=opts, client=client)
    items = []
    for r in relations:
        match = scores.get(r["id"], 0.0)
        if match >= threshold:
            items.append({"keyword": r["keyword"], "similarity_type": r["similarity_type"], "context": r["context"],
                          "score": r["score"], "context_match_score": match, "directional": r["directional"],
                          "direction": r["direction"]})
    items.sort(key=lambda x: (-x["context_match_score"], -x["score"], x["keyword"].lower()))
    return {"keyword": keyword, "user_context": user_context, "similar_keywords": items, "count": len(items),
            "llm": info["llm"], "cache": info["cache"]}


class QueryContextScorer:
    """``query --context`` with an LLM: a context scorer (see :mod:`kb_indexer.search.context`)
    that sends each expansion hop's relations in one batched, cached call, falls back to the
    lexical measure on failure, and reports what happened for the query's JSON."""

    def __init__(self, conn: sqlite3.Connection, opts: LLMOptions | None = None, client: Any = None):
        from kb_indexer.llm.structured import LLMClient

        self.client = client if client is not None else LLMClient.from_options(opts, conn)
        self.conn = conn
        self.calls = 0
        self.errors: list[str] = []

    def __call__(self, user_context: str, candidates: list[dict[str, Any]]) -> dict[Any, float]:
        if self.errors:  # the LLM already failed for this query: do not wait for it again
            return lexical_scores(user_context, candidates)
        self.calls += 1
        scores, info = score_contexts(self.conn, user_context, candidates, client=self.client)
        if info["llm"].get("error"):
            self.errors.append(info["llm"]["error"])
        return scores

    def report(self) -> dict[str, Any]:
        if self.errors:
            llm = self.client.report(used=False, fallback="lexical", error=self.errors[-1])
        else:
            llm = self.client.report(used=self.calls > 0)
        return {"llm": llm, "cache": self.client.cache_report()}

    def close(self) -> None:
        self.client.close()
