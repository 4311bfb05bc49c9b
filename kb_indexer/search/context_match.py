"""Context matching: how well does each keyword relation fit the user's context?

One batched, cached LLM call scores every candidate relation of a keyword
(keyword, related keyword, type, stored context, stored score) against the
user's context. The model answers a percentage, an integer 0..100, per numbered
relation (an ``enum`` in the schema, so grammar-constrained servers such as
llama.cpp cannot go out of range, which a ``number`` with ``minimum``/``maximum``
does not ensure: their grammars ignore the bounds) and ``context_match_score``
is that number / 100: 0.92 is a possible score, not only tenths. ``contrast``
relations are rated low by instruction.

Without a working LLM (backend ``none``, server down, bad answer) the scores
come from :func:`kb_indexer.search.context.lexical_scores` (the one lexical
rule, shared with ``query --context``), and the ``llm`` report says
``"fallback": "lexical"`` with the error. Candidates are scored in batches of
``MAX_PER_CALL``; when one batch fails, only that batch falls back: the other
batches keep their LLM scores, and ``llm.batches`` counts both
(``{"total", "llm", "lexical"}``). After a failure that is not about one
answer (timeout, server down, rate limit), the remaining batches fall back
without waiting for the server again.

For other features (``query --context``)::

    scores, info = score_contexts(conn, "game AI", candidates, opts=LLMOptions(...))

``candidates`` are dicts with ``id``, ``keyword`` (the related keyword),
``similarity_type``, ``context``, ``score`` and optionally ``source`` (the
keyword they relate to). ``scores`` maps each id to 0..1; ``info`` is
``{"llm": {...}, "cache": {"hits", "misses"}}``.
"""

from __future__ import annotations

from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.llm.base import LLMBadResponse, LLMError, Message
from kb_indexer.llm.config import LLMOptions, chosen_backend, unconfigured_report
from kb_indexer.llm.schema import numbered_ratings
from kb_indexer.llm.structured import LLMClient
from kb_indexer.search.context import lexical_scores as _lexical_list
from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD
from kb_indexer.store.dbapi import Connection

TASK = "context_match"
MAX_PER_CALL = 40          # more candidates than this are scored in several calls
SCALE = 100                # answers are percentages: score = answer / SCALE

SYSTEM_PROMPT = (
    "You judge whether keyword relations from a knowledge base fit a user's context.\n"
    "For each numbered relation, give a fit percentage, an integer from 0 to 100 (for example 92): "
    "100 = the relation is exactly what the user means in their context, 50 = loosely related, "
    "0 = irrelevant or misleading there.\n"
    "Judge by the relation type and by its stored context (which says when the relation applies), "
    "compared with the user's context.\n"
    "Relations of type 'contrast' link opposing or competing concepts: score them 0 to 20 unless the "
    "user's context is explicitly about comparing or contrasting them.\n"
    "Score every relation, each once."
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
            f"to its fit percentage from 0 to 100.")
    return [Message("system", SYSTEM_PROMPT), Message("user", user)]


def schema_for(n: int) -> dict[str, Any]:
    return numbered_ratings(n, SCALE)


def max_tokens_for(n: int) -> int:
    return 24 + 12 * n


# -- lexical fallback ----------------------------------------------------------------------

def lexical_scores(user_context: str, candidates: list[dict[str, Any]]) -> dict[Any, float]:
    """The one lexical rule (:func:`kb_indexer.search.context.lexical_scores`), keyed by candidate id."""
    return {c["id"]: s for c, s in zip(candidates, _lexical_list(user_context, candidates))}


# -- the scorer ----------------------------------------------------------------------------


class _Tally:
    """What happened to the batches of one scoring run, for the ``llm`` report."""

    def __init__(self) -> None:
        self.llm = 0
        self.lexical = 0
        self.error: str | None = None
        self.give_up = False   # the server itself failed: do not wait for it again

    def failed(self, exc: LLMError) -> None:
        self.lexical += 1
        self.error = exc.message
        if not isinstance(exc, LLMBadResponse):
            self.give_up = True

    def report(self, client: LLMClient) -> dict[str, Any]:
        fallback = "lexical" if self.lexical else None
        out = client.report(used=self.llm > 0, fallback=fallback, error=self.error)
        out["batches"] = {"total": self.llm + self.lexical, "llm": self.llm, "lexical": self.lexical}
        return out


def _score_batch(client: Any, user_context: str, batch: list[dict[str, Any]], keyword: str | None) -> dict[Any, float]:
    result = client.structured(TASK, build_messages(user_context, batch, keyword), schema_for(len(batch)),
                               max_tokens=max_tokens_for(len(batch)), temperature=0.0)
    return {c["id"]: round(int(result.data[str(i + 1)]) / SCALE, 3) for i, c in enumerate(batch)}


def _score_batches(client: Any, user_context: str, candidates: list[dict[str, Any]], keyword: str | None,
                   tally: _Tally) -> dict[Any, float]:
    scores: dict[Any, float] = {}
    for start in range(0, len(candidates), MAX_PER_CALL):
        batch = candidates[start:start + MAX_PER_CALL]
        if tally.give_up:
            scores.update(lexical_scores(user_context, batch))
            tally.lexical += 1
            continue
        try:
            scores.update(_score_batch(client, user_context, batch, keyword))
            tally.llm += 1
        except LLMError as exc:
            scores.update(lexical_scores(user_context, batch))
            tally.failed(exc)
    return scores


def score_contexts(conn: Connection | None, user_context: str, candidates: list[dict[str, Any]], *,
                   keyword: str | None = None, opts: LLMOptions | None = None,
                   client: Any = None, tally: "_Tally | None" = None) -> tuple[dict[Any, float], dict[str, Any]]:
    """Score every candidate 0..1 against ``user_context``: one LLM call per batch, else lexical.

    Raises ``UsageError`` only for bad settings (unknown backend); every LLM
    failure becomes the lexical fallback for its batch, reported in ``info["llm"]``.
    """
    own = client is None
    if own:
        client = LLMClient.from_options(opts, conn)
    tally = tally if tally is not None else _Tally()
    try:
        if not candidates:
            return {}, {"llm": tally.report(client), "cache": client.cache_report()}
        if not client.enabled:
            info = client.report(used=False, fallback="lexical", error=client.config.backend_error or "LLM disabled (backend 'none')")
            return lexical_scores(user_context, candidates), {"llm": info, "cache": client.cache_report()}
        scores = _score_batches(client, user_context, candidates, keyword, tally)
        return scores, {"llm": tally.report(client), "cache": client.cache_report()}
    finally:
        if own:
            client.close()


def similar_in_context(conn: Connection, keyword: str, relations: list[dict[str, Any]], user_context: str,
                       threshold: float = DEFAULT_CONTEXT_THRESHOLD, opts: LLMOptions | None = None, client: Any = None) -> dict[str, Any]:
    """``kbindex similar KEYWORD --user-context ...``: the relations whose context fits, best first."""
    if not isinstance(user_context, str) or not user_context.strip():
        raise UsageError("--user-context must not be empty")
    if not 0.0 <= float(threshold) <= 1.0:
        raise UsageError(f"--context-threshold must be between 0 and 1, got {threshold}")
    candidates = [{"id": r["id"], "keyword": r["keyword"], "source": keyword, "similarity_type": r["similarity_type"],
                   "context": r["context"], "score": r["score"]} for r in relations]
    if client is None and chosen_backend(opts) is None:   # as `query --context`: an LLM only when one is chosen
        scores = lexical_scores(user_context, candidates)
        info = {"llm": unconfigured_report(opts), "cache": {"hits": 0, "misses": 0}}
    else:
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
    that sends each expansion hop's relations in batched, cached calls; a failed batch falls back
    to the one lexical rule, and after a server failure every later hop does too (without waiting
    for the server again). :meth:`report` says what happened, for the query's JSON."""

    def __init__(self, conn: Connection, opts: LLMOptions | None = None, client: Any = None):
        self.client = client if client is not None else LLMClient.from_options(opts, conn)
        self.conn = conn
        self.tally = _Tally()

    def __call__(self, user_context: str, candidates: list[dict[str, Any]]) -> dict[Any, float]:
        scores, _ = score_contexts(self.conn, user_context, candidates, client=self.client, tally=self.tally)
        return scores

    def report(self) -> dict[str, Any]:
        return {"llm": self.tally.report(self.client), "cache": self.client.cache_report()}

    def close(self) -> None:
        self.client.close()
