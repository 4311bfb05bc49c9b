"""Full-text search (BM25) with safe query building, over the store's full-text index
(:mod:`kb_indexer.store.fulltext`: FTS5 on SQLite, the same bm25 on PostgreSQL).

User text never reaches FTS5 as syntax. :mod:`kb_indexer.search.terms` splits
it into plain terms; here every term becomes an FTS5 *string literal*
(``"..."`` with ``"`` doubled) and the literals are OR-ed. Inside a string
literal FTS5 sees no operators, column filters, prefixes or ``NEAR``; a term
with several tokens (``q-learning``, ``App.tsx``, a known multi-word keyword)
is a phrase. An input with no usable term gives no query (an empty result).

Ranking is FTS5's ``bm25()`` with per-column weights (title, summary, keywords,
body). FTS5 floors a term's IDF at ~1e-6 when it occurs in more than half of
the documents, so on a tiny knowledge base every score can be ~0: scores are
therefore normalised per query (divided by the best one), and every matching
document also gets a presence share (``PRESENCE``), so a match is never
scored 0 and results come back on a 3-document KB.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import ContextManager

from kb_indexer.store import fulltext as store
from kb_indexer.store.bm25 import COLUMN_WEIGHTS
from kb_indexer.store.dbapi import Connection

# bm25() column weights: one constant, kb_indexer.store.sparse's (the sparse index is built for them).
DEFAULT_COLUMN_WEIGHTS = COLUMN_WEIGHTS
PRESENCE = 0.1          # share of the full-text score given for merely matching
SNIPPET_TOKENS = 24
# bm25 scores this close (relative to the query's best) may fuse into equal relevance scores, which are
# then ordered by filepath: a cut at ``limit`` keeps every document that close to the last one kept.
TIE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class FtsQuery:
    terms: tuple[str, ...]     # plain terms, each one string literal
    match: str                 # the MATCH expression (only literals and OR)

    def __bool__(self) -> bool:
        return bool(self.terms)


def quote(term: str) -> str:
    """One FTS5 string literal: the text between double quotes, ``"`` doubled."""
    return '"' + term.replace('"', '""') + '"'


def build_query(terms: list[str], max_terms: int | None = None) -> FtsQuery:
    """OR of the terms, in order; terms without a word character are dropped.

    Repeated terms are kept on purpose: FTS5 scores each occurrence, which is
    BM25's query term frequency (a word asked twice weighs twice).
    """
    kept: list[str] = []
    for t in terms:
        t = " ".join(t.split())
        if t and any(ch.isalnum() for ch in t):
            kept.append(t)
            if max_terms is not None and len(kept) >= max_terms:
                break
    return FtsQuery(tuple(kept), " OR ".join(quote(t) for t in kept))


def tie_margin(best: float) -> float:
    """How far below a cut-off bm25 score a document may still tie with it (see ``TIE_TOLERANCE``)."""
    return TIE_TOLERANCE * best if best > 0 else float("inf")


def one_read(conn: Connection) -> ContextManager[None]:
    """A block (one question) in which the full text's scores are read once (see ``store.one_read``)."""
    return store.one_read(conn)


def search(conn: Connection, query: FtsQuery, limit: int,
           weights: tuple[float, ...] = DEFAULT_COLUMN_WEIGHTS,
           tokens: int = SNIPPET_TOKENS, snippet_rows: int | None = None) -> list[tuple[int, float, str]]:
    """Best ``limit`` documents as ``(document id, bm25 score, snippet)``, higher score is better, plus any
    document that may tie with the last of them (FTS5 cuts ties arbitrarily; the caller orders them by
    filepath, so a result never depends on the limit).

    The rows are sorted before their snippets are made, so only the returned rows pay for one
    (:func:`kb_indexer.store.fulltext.ranked` says how; ``snippet_rows``: only the first so many may get one,
    "" for the others). One row more than ``limit`` tells whether the cut falls inside a tie.
    """
    if not query or limit <= 0:
        return []
    fetch = limit + 1
    rows = _ranked(conn, query, fetch, weights, tokens, snippet_rows)
    if len(rows) <= limit:
        return rows
    boundary = rows[limit - 1][1] - tie_margin(rows[0][1])
    while len(rows) == fetch and rows[-1][1] >= boundary:   # the cut is inside a tie: look further
        fetch *= 2
        rows = _ranked(conn, query, fetch, weights, tokens, snippet_rows)
    return [r for r in rows if r[1] >= boundary]


def _ranked(conn: Connection, query: FtsQuery, limit: int, weights: tuple[float, ...],
            tokens: int, snippet_rows: int | None = None) -> list[tuple[int, float, str]]:
    """The best ``limit`` rows with their snippets (made for the returned rows only)."""
    rows = store.ranked(conn, query, limit, weights, tokens, SNIPPET_FTS_MAX_CHARS, snippet_rows)
    made = rows if snippet_rows is None else rows[:snippet_rows]   # the rest: "" (made later if shown)
    large = _large_snippets(conn, query, [r[0] for r in made if r[2] is None], tokens)
    return [(r[0], r[1], _clean_snippet(r[2]) if r[2] is not None else large.get(r[0], "")) for r in rows]


def _large_snippets(conn: Connection, query: FtsQuery, doc_ids: list[int], tokens: int) -> dict[int, str]:
    """Snippets the store left to us (a body over ``SNIPPET_FTS_MAX_CHARS``), from a bounded scan."""
    out = {}
    for doc_id, body in store.bodies(conn, doc_ids).items():
        text = bounded_snippet(body, query.terms, tokens)
        if text:
            out[doc_id] = text
    return out


def best_with_ties(scores: dict[int, float], n: int, best: float) -> list[int]:
    """Ids of the ``n`` best scores plus those that may tie with the n-th (``best``: the query's best bm25)."""
    if n <= 0 or not scores:
        return []
    if len(scores) <= n:
        return list(scores)
    boundary = heapq.nlargest(n, scores.values())[-1] - tie_margin(best)
    return [d for d, s in scores.items() if s >= boundary]


PER_ROW_MAX = 16   # above this many documents, one pass over all matches is cheaper than per-row lookups


def scores_for(conn: Connection, query: FtsQuery, doc_ids: list[int],
               weights: tuple[float, ...] = DEFAULT_COLUMN_WEIGHTS) -> dict[int, float]:
    """bm25 scores of the given documents (those that match at all)."""
    if not query or not doc_ids:
        return {}
    if len(doc_ids) <= PER_ROW_MAX:
        return store.scores_of(conn, query, doc_ids, weights)
    wanted = set(doc_ids)
    return {d: s for d, s in all_scores(conn, query, weights).items() if d in wanted}


def count_found(conn: Connection, query: FtsQuery | None, doc_ids: list[int]) -> int:
    """How many indexed documents match ``query`` or are among ``doc_ids`` (found another way)."""
    return store.count_found(conn, query if query else None, doc_ids)


def phrase_sql(weights: tuple[float, ...] = DEFAULT_COLUMN_WEIGHTS) -> str:
    """The sparse index's phrase scorer for these weights (see :func:`kb_indexer.store.fulltext.phrase_sql`)."""
    return store.phrase_sql(weights)


def all_scores(conn: Connection, query: FtsQuery,
               weights: tuple[float, ...] = DEFAULT_COLUMN_WEIGHTS) -> dict[int, float]:
    """bm25 of every matching document, in one pass."""
    if not query:
        return {}
    return store.all_scores(conn, query, weights)


def _clean_snippet(text: str | None) -> str:
    return " ".join((text or "").split())


def snippets(conn: Connection, query: FtsQuery, doc_ids: list[int],
             tokens: int = SNIPPET_TOKENS) -> dict[int, str]:
    """A short passage around the matches of each document (matches in ``**bold**``).

    FTS5's ``snippet()`` costs the square of a column's matches (a 0.5 MB document full of the query's
    words took seconds), so it only serves documents whose body is under ``SNIPPET_FTS_MAX_CHARS``;
    longer bodies (and every body on PostgreSQL) get :func:`bounded_snippet`, linear and capped.
    """
    if not query or not doc_ids:
        return {}
    out, large = {}, []
    for doc_id, snip in store.snippets(conn, query, doc_ids, tokens, SNIPPET_FTS_MAX_CHARS).items():
        if snip is None:
            large.append(doc_id)
        elif _clean_snippet(snip):
            out[doc_id] = _clean_snippet(snip)
    out.update(_large_snippets(conn, query, large, tokens))
    return out


# Bodies longer than this get a snippet made in Python from a bounded scan (see ``snippets``).
SNIPPET_FTS_MAX_CHARS = 64 * 1024
SNIPPET_MAX_MATCHES = 256        # the passage is chosen among the first this many matches
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@lru_cache(maxsize=256)   # a question's ten snippets share it
def _term_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """Words of the query terms, each matching its inflections (``learn`` matches ``learning``): an
    approximation of the porter stemmer the index uses, good enough to place and bold a passage."""
    stems = set()
    for term in terms:
        for word in re.findall(r"\w+", term.lower()):
            for suffix in _SUFFIXES:
                if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                    word = word[: -len(suffix)]
                    break
            stems.add(word)
    if not stems:
        return None
    alternation = "|".join(re.escape(w) for w in sorted(stems, key=len, reverse=True))
    return re.compile(r"\b(?:%s)\w{0,6}\b" % alternation, re.IGNORECASE)


def bounded_snippet(text: str, terms: tuple[str, ...], tokens: int = SNIPPET_TOKENS) -> str:
    """A passage of about ``tokens`` words around the densest run of query words, matches in ``**bold**``.

    Linear in the text and bounded: only the first ``SNIPPET_MAX_MATCHES`` matches are considered.
    """
    pattern = _term_pattern(terms)
    if pattern is None:
        return ""
    matches = []
    for m in pattern.finditer(text):
        matches.append(m)
        if len(matches) >= SNIPPET_MAX_MATCHES:
            break
    if not matches:
        return ""
    width = tokens * 7  # characters: about ``tokens`` words
    words = [m.group(0).lower() for m in matches]
    ends = [m.end() for m in matches]
    best, best_score, j = 0, -1, 0
    for i, m in enumerate(matches):  # two pointers: matches within ``width`` characters of match i
        j = max(j, i)
        at = m.start()
        while j + 1 < len(matches) and ends[j + 1] - at <= width:
            j += 1
        score = len(set(words[i:j + 1]))
        if score > best_score:
            best, best_score = i, score
    start = max(0, matches[best].start() - width // 4)
    end = min(len(text), start + width)
    if start > 0:  # whole words at both ends, unless a "word" runs on and on
        space = text.rfind(" ", max(0, start - 40), start)
        start = space + 1 if space >= 0 else start
    space = text.find(" ", end, end + 40)
    end = space if space >= 0 else end
    passage = pattern.sub(lambda m: f"**{m.group(0)}**", text[start:end])
    return ("…" if start > 0 else "") + _clean_snippet(passage) + ("…" if end < len(text) else "")


def normalise(scores: dict[int, float]) -> dict[int, float]:
    """Per-query full-text score in (0, 1]: ``PRESENCE + (1 - PRESENCE) * bm25 / best bm25``."""
    if not scores:
        return {}
    best = max(scores.values())
    if best <= 0:
        return {d: PRESENCE for d in scores}
    return {d: PRESENCE + (1.0 - PRESENCE) * max(0.0, s) / best for d, s in scores.items()}
