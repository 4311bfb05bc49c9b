"""FTS5's bm25, the one formula every engine's full-text scores use (SQLite's sparse index in
:mod:`kb_indexer.store.sparse`, the PostgreSQL engine's own statistics in :mod:`kb_indexer.store.pg.fulltext`),
and the column weights it ranks with by default. A leaf: both engines import it."""

from __future__ import annotations

import math
from typing import Any

# bm25() column weights: title, summary, keywords, body; the one constant full-text search ranks with by default
# (kb_indexer.search.fulltext.DEFAULT_COLUMN_WEIGHTS is this) and the sparse index is built for. Titles and
# keyword tags are short and curated (x2); a summary is mostly the body's first paragraph again, so it counts a
# quarter. Measured on Cranfield (bench/ir_eval.py): title 1.5-2.5 with summary 0-0.25 give nDCG@10
# 0.364-0.365; summary 1 gives 0.356-0.358.
COLUMN_WEIGHTS: tuple[float, float, float, float] = (2.0, 0.25, 2.0, 1.0)

# FTS5's bm25 (fts5_aux.c), the one formula every engine's full-text scores use (the sparse index here, the
# PostgreSQL engine's own statistics in kb_indexer.store.pg.fulltext): per query term (a phrase counts as one),
# ``idf × f·(k1 + 1) / (f + k1·(1 − b + b·D/avgdl))``, ``idf = ln((N − n + 0.5) / (n + 0.5))`` floored at 1e-6,
# ``f`` the column-weighted frequency, ``D`` the document's tokens over all columns, summed in query order.
K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6


def bm25_idf(documents: int, matching: int) -> float:
    """A term's IDF: ``documents`` (N) indexed, ``matching`` (n) of them hold the term."""
    idf = math.log((documents - matching + 0.5) / (matching + 0.5))
    return idf if idf > 0.0 else IDF_FLOOR


def bm25_norm(lengths: Any, avgdl: float) -> Any:
    """``k1·(1 − b + b·D/avgdl)`` per document (``lengths``: D, numpy or float)."""
    return K1 * (1.0 - B + B * lengths / avgdl)


def bm25_part(idf: float, freqs: Any, norm: Any) -> Any:
    """One term's share of the score of documents with weighted frequencies ``freqs`` and ``norm`` (bm25_norm)."""
    return idf * ((freqs * (K1 + 1.0)) / (freqs + norm))
