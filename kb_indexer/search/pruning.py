"""Dropping query terms that carry no ranking information on large knowledge bases.

BM25 gives a term found in more than half of the documents an IDF of about zero (FTS5 floors it at
~1e-6), so such a term changes no score, yet every document containing it matches and is scored:
on 100,000 notes a question with one such word scores most of the index. Above ``PRUNE_MIN_DOCS``
documents, single-token terms whose document frequency exceeds ``COMMON_SHARE`` of the documents are
left out of the full-text query (phrases are kept: they are rarer than their words). If every term is
that common, the query is left as it is, so a question never loses all its matches.

Terms are tokenised by the index's own tokenizer (:func:`kb_indexer.store.fulltext.tokenizer`: on SQLite
a temporary FTS5 table in the connection's temp schema, so a read-only index is never written).
Whether a one-token term is that common is counted on the index itself, as a string literal, and the
count stops as soon as it passes the share: at 100,000 documents this costs about half of reading the
term's document frequency from an ``fts5vocab`` view, which walks every position of the term.
"""

from __future__ import annotations


from kb_indexer.search.fulltext import FtsQuery, build_query
from kb_indexer.search.sparse import View
from kb_indexer.store import fulltext
from kb_indexer.store.fts_tokens import Tokenizer
from kb_indexer.store.dbapi import Connection

PRUNE_MIN_DOCS = 5_000
COMMON_SHARE = 0.5


def single_tokens(conn: Connection, terms: tuple[str, ...], source: Tokenizer | View | None = None
                  ) -> dict[int, str]:
    """``{index of a term: its one token}`` for the terms that are one token after tokenisation (``source``:
    a query's sparse view, whose tokens are cached for scoring too)."""
    toks = (source or fulltext.tokenizer(conn)).tokens(terms)
    return {i: t[0] for i, t in enumerate(toks) if len(t) == 1}


def counted_up_to(total_docs: int, terms: int) -> int | None:
    """Where counting a single-token term's documents stops when a query of ``terms`` terms is pruned (one more
    than the share allows), or None when it is not pruned (a small knowledge base, a single term)."""
    return None if total_docs < PRUNE_MIN_DOCS or terms < 2 else int(COMMON_SHARE * total_docs) + 1


def prune_common_terms(conn: Connection, query: FtsQuery, total_docs: int,
                       view: View | None = None) -> tuple[FtsQuery, list[str]]:
    """(the query without near-zero-IDF terms, the terms left out); ``view``: the sparse index, which
    knows every term's document frequency."""
    cap = counted_up_to(total_docs, len(query.terms))
    if cap is None:
        return query, []
    singles = single_tokens(conn, query.terms, view)
    first: dict[str, int] = {}   # by token: "Learning" and "learning" are counted once
    for i, token in singles.items():
        first.setdefault(token, i)
    if view is not None:
        found = [view.df(conn, token) for token in first]
    else:
        found = fulltext.count_each(conn, [build_query([query.terms[i]]) for i in first.values()], cap)
    verdict = {token: n > COMMON_SHARE * total_docs for token, n in zip(first, found)}
    common = {i for i, token in singles.items() if verdict[token]}
    if not common or len(common) == len(query.terms):
        return query, []
    kept = [t for i, t in enumerate(query.terms) if i not in common]
    return build_query(kept), [query.terms[i] for i in sorted(common)]
