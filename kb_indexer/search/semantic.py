"""Dense retrieval: the question's embedding against the stored chunk vectors.

Brute-force cosine with numpy over the model's packed matrix, unless the store searches vectors itself
(PostgreSQL with pgvector: :func:`kb_indexer.store.vectors.nearest` answers, and :meth:`DenseResult.get`
asks the store for any other document's cosine).

The search layer does not call embedding backends: the API layer hands :func:`run` a
:class:`DenseSource`, the index's model whose vectors to read and a function that embeds the
question (see :mod:`kb_indexer.embed.query`). A document's dense score is the cosine of its
best chunk. numpy is imported here only, and only when a query uses vectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kb_indexer.errors import KbError
from kb_indexer.search.arrays import lookup
from kb_indexer.store import vectors as store
from kb_indexer.store.dbapi import Connection

#: How many of the best documents by vector similarity become candidates of a semantic or hybrid query
#: (at least; ``limit`` when larger).
DENSE_DEPTH = 100


@dataclass
class DenseSource:
    """What a query needs to use vectors; ``unavailable`` says why it cannot (then the query is lexical)."""

    backend: str | None = None
    model_name: str | None = None
    model: store.EmbeddingModel | None = None
    embed: Callable[[str], Any] | None = None     # question -> unit vector (raises KbError on failure)
    unavailable: str | None = None
    configured: bool = False                      # the user chose an embedding backend explicitly


@dataclass
class DenseResult:
    """Best-chunk cosine per document: ``top`` for the best documents, :meth:`get` for any other."""

    top: dict[int, float]
    docs: Any = None          # sorted document ids with vectors (numpy)
    best: Any = None          # their best cosine (numpy)
    rebuilt: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    fetch: Callable[[list[int]], dict[int, float]] | None = None   # the store's cosines (no matrix read)

    def get(self, doc_ids: list[int]) -> dict[int, float]:
        if self.fetch is not None:
            return self.fetch(doc_ids)
        return lookup(self.docs, self.best, doc_ids)


def run(conn: Connection, source: DenseSource, question: str, depth: int) -> DenseResult:
    """Cosine of every document's best chunk with the question; the ``depth`` best in ``top``.

    Raises ``KbError`` when the question cannot be embedded (the caller falls back to lexical search).
    """
    if source.model is None or source.embed is None:   # before numpy: an index without vectors never loads it
        raise KbError(source.unavailable or "no vectors")
    import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

    model = source.model
    q = np.asarray(source.embed(question), dtype=np.float32)
    if q.shape != (model.dim,):
        raise KbError(f"the question's embedding has {q.shape[-1]} dimensions, the index's vectors "
                      f"{model.dim}", code="embedding_mismatch")
    found = store.nearest(conn, model, q, depth)
    if found is not None:
        return DenseResult(found[0], info=dict(found[1]),
                           fetch=lambda ids: store.best_cosines(conn, model, q, ids))
    doc_ids, matrix, rebuilt = store.load_matrix(conn, model)
    if not len(doc_ids):
        return DenseResult({}, rebuilt=rebuilt)
    sims = matrix @ q
    starts, docs = _documents(doc_ids)
    best = np.maximum.reduceat(sims, starts)
    k = min(depth, len(docs))
    idx = np.argpartition(-best, k - 1)[:k] if k < len(docs) else np.arange(len(docs))
    top = {int(docs[i]): float(best[i]) for i in idx}
    return DenseResult(top, docs, best, rebuilt, {"chunks": int(len(doc_ids)), "documents": int(len(docs))})


_STARTS: dict[int, tuple[Any, Any, Any]] = {}


def _documents(doc_ids: Any) -> tuple[Any, Any]:
    """(first row of each document, its id) of a matrix's row document ids (kept for the array mapped last)."""
    import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

    cached = _STARTS.get(id(doc_ids))
    if cached is not None and cached[0] is doc_ids:
        return cached[1], cached[2]
    starts = np.flatnonzero(np.r_[True, doc_ids[1:] != doc_ids[:-1]])
    _STARTS.clear()
    _STARTS[id(doc_ids)] = (doc_ids, starts, doc_ids[starts])
    return starts, doc_ids[starts]


def normalise(scores: dict[int, float], floor: float) -> dict[int, float]:
    """Per-query dense score in [0, 1]: ``(cos - floor) / (best - floor)``, where ``floor`` is the cosine
    of the ``DENSE_DEPTH``-th best document (so the candidates spread over [0, 1] whatever the model's
    cosine range), clipped at 0."""
    if not scores:
        return {}
    best = max(scores.values())
    span = best - floor
    if span <= 1e-9:
        return {d: 1.0 for d in scores}
    return {d: min(1.0, max(0.0, (s - floor) / span)) for d, s in scores.items()}
