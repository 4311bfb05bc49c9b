"""Fusing keyword-tag evidence with full-text BM25 into one relevance score.

Keyword part (in [0, 1]): for every user keyword, its best evidence in the
document, then the mean over the user keywords:

- the document is tagged with the user keyword itself: 1.0 (exact);
- it is tagged with an expansion of it: ``expansion weight x EXPANSION_FACTOR``.

Because ``EXPANSION_FACTOR < 1``, even a perfect synonym counts less than the
keyword itself: with equal other evidence, exact matches outrank
expansion-only matches. Learned tags (``document_keywords.source='learned'``)
count like file tags scaled by their evidence weight (``document_keywords.weight``).

Learned part: :func:`apply_learned` adds the boosts of learned question→document
associations (see :mod:`kb_indexer.learn.apply`) after fusion.

Full-text part (in (0, 1]): :func:`kb_indexer.search.fulltext.normalise`
(bm25 divided by the query's best bm25, plus a presence share).

Dense part (in [0, 1], semantic and hybrid methods with vectors):
:func:`kb_indexer.search.semantic.normalise` (the best chunk's cosine, rescaled
between the ``DENSE_DEPTH``-th best document's cosine and the best one's). When
full text found something too, the parts are fused twice: the first fusion's best
documents move the question's vector (vector feedback,
:meth:`kb_indexer.search.semantic.DenseResult.refine`), every candidate's cosine is
taken again with it, and the second fusion ranks (Cranfield, MiniLM: nDCG@10 0.407
-> 0.426; the weight table below is of the first fusion alone).

``relevance_score = (W_KEYWORD * keyword + W_FULLTEXT * fulltext + W_DENSE * dense)
/ (sum of the weights of the channels that found anything for this query)``: a
channel that found nothing at all (no tags matched, no full-text query, no
vectors) does not dilute the others, so a KB without tags ranks exactly like
full text alone, and one without vectors exactly as before vectors existed.

W_DENSE was tuned on Cranfield with all-MiniLM-L6-v2 (no tags there, so only the
ratio W_DENSE : W_FULLTEXT matters; 225 queries, nDCG@10 / Recall@100; kbindex
full text alone 0.365 / 0.747, vectors alone 0.374 / 0.776, RRF(k=60) 0.405):

=======  =======  =======  =======  =======
W_DENSE  0.2      0.3      0.4      0.5      0.6
nDCG@10  0.403    0.408    0.407    0.409    0.406
R@100    0.776    0.776    0.781    0.777    0.778
=======  =======  =======  =======  =======

A flat optimum: the weight equal to full text's (0.4) is kept, the choice that
assumes least about an unseen collection. Min-max normalising the dense part
between the 100th and the best cosine keeps it independent of a model's cosine
range (dividing by the best cosine scored 0.41 here but depends on the range).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:   # kb_indexer.results imports typing_extensions below Python 3.12: annotations only
    from kb_indexer.results import Evidence as EvidenceOut, ScoreParts

EXPANSION_FACTOR = 0.8
W_KEYWORD = 0.6
W_FULLTEXT = 0.4
W_DENSE = 0.4


@dataclass
class Evidence:
    user_keyword: str
    keyword: str            # the document's tag that matched
    kind: str               # exact | expansion
    value: float            # contribution for this user keyword
    weight: float = 1.0     # expansion weight (1 for exact)
    similarity_type: str | None = None
    relation_id: int | None = None
    via: str | None = None              # the keyword the last hop expanded from
    context_match: float | None = None  # how well the relation fitted the user's context


@dataclass
class Candidate:
    doc_id: int
    evidence: list[Evidence] = field(default_factory=list)
    bm25: float | None = None
    cosine: float | None = None     # best chunk's cosine with the question (vectors used)
    semantic: bool = False          # among the documents vector search found
    keyword: float = 0.0
    fulltext: float = 0.0
    dense: float = 0.0
    learned: float = 0.0    # boost from learned question->document associations (may be negative)
    score: float = 0.0
    feedback: bool = False  # the full-text score includes pseudo-relevance feedback words it matches
    neighbours: float | None = None   # the score's part from its neighbours (search/neighbours.py; None: not run)
    scale: float = 1.0      # what the weighted parts plus ``learned`` are divided by (see :func:`explain`)

    @property
    def sources(self) -> list[str]:
        out = []
        if self.evidence:
            kinds = {e.kind for e in self.evidence}
            if "exact" in kinds:
                out.append("keyword")
            if "expansion" in kinds:
                out.append("expansion")
        if self.bm25 is not None:
            out.append("fulltext")
            if self.feedback:
                out.append("feedback")
        if self.semantic:
            out.append("semantic")
        if self.learned > 0:
            out.append("learned")
        return out


def fuse(docs: Iterable[int], keyword: dict[int, float], ft_norm: dict[int, float],
         dense_norm: dict[int, float] | None = None, w_keyword: float = W_KEYWORD,
         w_fulltext: float = W_FULLTEXT, w_dense: float = W_DENSE) -> tuple[dict[int, float], dict[str, float]]:
    """Each document's fused score from its parts (``keyword``: the tagged documents' keyword parts), and
    the channel weights used."""
    dense_norm = dense_norm or {}
    wk = w_keyword if keyword else 0.0
    wf = w_fulltext if ft_norm else 0.0
    wd = w_dense if dense_norm else 0.0
    total = wk + wf + wd
    kw_get, ft_get, dn_get = keyword.get, ft_norm.get, dense_norm.get
    scores = {d: (wk * kw_get(d, 0.0) + wf * ft_get(d, 0.0) + wd * dn_get(d, 0.0)) / total if total > 0 else 0.0
              for d in docs}
    out = {"keyword": round(wk / total, 4) if total else 0.0, "fulltext": round(wf / total, 4) if total else 0.0}
    if dense_norm:
        out["dense"] = round(wd / total, 4)
    return scores, out


def apply_learned(scores: dict[int, float], learned: dict[int, float]) -> float:
    """Add learned association boosts (from ``kbindex learn``) to the fused scores.

    A helpful mark for this question lifts a document, a not-helpful mark lowers it (each boost within
    (-1, +1): :func:`kb_indexer.learn.boosts.lift`); scores are divided by 1 + the largest boost so that
    relevance stays in [0, 1] and order is kept.
    Returns that divisor (1.0 when no boost applies), which ``--explain`` shows as ``scale``.
    """
    boosts = {d: b for d, b in learned.items() if b and d in scores}
    if not boosts:
        return 1.0
    scale = 1.0 + max(0.0, max(boosts.values()))
    for d in scores:
        scores[d] = max(0.0, (scores[d] + boosts.get(d, 0.0)) / scale)
    return scale


def explain(c: Candidate, weights: dict[str, float]) -> ScoreParts:
    out: ScoreParts = {
        "keyword": round(c.keyword, 4),
        "fulltext": round(c.fulltext, 4),
        "dense": round(c.dense, 4),
        "cosine": None if c.cosine is None else round(c.cosine, 4),
        "learned": round(c.learned, 4),
        "bm25": None if c.bm25 is None else round(c.bm25, 6),
        "weights": weights,
        "scale": round(c.scale, 6),
        "evidence": [_evidence(e) for e in c.evidence],
    }
    if c.neighbours is not None:
        out["neighbours"] = round(c.neighbours, 4)
    return out


def _evidence(e: Evidence) -> EvidenceOut:
    out: EvidenceOut = {"user_keyword": e.user_keyword, "keyword": e.keyword, "kind": e.kind,
                        "value": round(e.value, 4), "expansion_weight": round(e.weight, 4)}
    if e.similarity_type is not None:
        out["similarity_type"] = e.similarity_type
    if e.relation_id is not None:
        out["relation_id"] = e.relation_id
    return out
