"""Learned question -> document associations at query time: the same question, and similar ones.

An association (see :mod:`kb_indexer.learn.learner`) says that a document was helpful (or not) for a
question with certain terms. It fires in two ways:

* **the same question** (or a near-identical one): the Jaccard overlap of the terms is at least
  ``ASSOC_MIN_OVERLAP``; the boost is ``weight x overlap``;
* **a similar question** (what makes feedback useful to the next, different question): the
  IDF-weighted similarity of the terms (:func:`similarity`) is at least ``NEIGHBOUR_MIN``; the boost is
  ``weight x similarity``. Only helpful marks carry over (a document that did not help one question
  says little about a different one).

However many associations fire for a document, :func:`lift` makes its boost from the strongest helpful one
and the strongest not-helpful one, never a sum: within (-1, +1), the bound docs/learning.md states. A popular
document is not pushed further for every question that resembles some of its askers, and six one-word
variants of a question marked helpful lift an unrelated note no more than one of them does (summed, they
lifted it above the right note). Its figures beside the sum: docs/benchmarks.md.

A term's IDF is counted over the active associations themselves (``log(1 + N / n_term)``): a term
that most learned questions share (``flow``, ``effect``) makes two questions barely similar, a rare one
makes them close. The question's terms no association has get the largest IDF, so an unseen topic
lowers the similarity. An association's terms the question lacks are counted at the question's mean
IDF (they are not read: the query reads only the rows of its own terms).

Both use the stored association items only: each boost names the learned ids whose lift is in it (``learned
list`` shows them), and ``learned remove`` (undo) of an association stops it firing for every question (the
next strongest association of the document, if one fires, then makes its boost).
``NEIGHBOUR_MIN`` was tuned on Cranfield only (seeds 1-5, unseen half, mean nDCG@10 change): 0.0 +0.0151,
0.05 +0.0151, 0.1 +0.0156, 0.15 +0.0149, 0.2 +0.0135, 0.25 +0.0133; 0.1 keeps the flat optimum and leaves out
the faintest matches (each would add a candidate to score). Summing the boosts of similar questions instead
of taking the largest scored +0.0128 at 0.2.

Tried for issue 30 and dropped (unseen half, mean nDCG@10 change). Cranfield seeds 1-3, one index per seed,
this rule +0.0157: per document, the IDF share of the question its helpful associations cover together
(instead of the largest single similarity) +0.0151, the larger of both +0.0159; a prior for documents
helpful for questions sharing a term (0.05 x n/(n+1)) +0.0136; the similar-question boost x0.5 +0.0115,
x1.5 +0.0115, x2 +0.0043, similarity^0.5 +0.0020, ^2 +0.0087; feedback-trained expansion (relevance-model
words of the 10 documents helpful for the most similar questions, their FTS5 bm25 added as a boost) 0.1
+0.0110, 0.2 +0.0012, 0.3 -0.0130, only questions with similarity >= 0.5 and times the question's bm25
+0.0167 (two more full-text passes per query). A prior lowering documents only ever marked not helpful by
questions sharing a term (0.03 x n/(n+1); seeds 1-5 in bench/feedback_eval.py, same runs): Cranfield
+0.0180 vs +0.0156, but held-out CISI +0.0020 vs +0.0035 and CACM +0.0136 vs +0.0171: not kept.

Learned expansion words fed into the full-text query (commits 14d98d1 and 4c69834, reverted; their
bench/feedback_eval.py ``--expansion`` columns ran each variant beside this rule on the same index in the
same run): search/feedback.py's second pass (as ``--prf``), its relevance-model words taken from documents
learned associations pick instead of the first-pass best, each word's bm25 weighted W in the sparse query.
Documents picked by this boost, W 1/3: Cranfield seeds 1-3 -0.0214 vs +0.0157; only boosts >= 0.3, W 0.1
+0.0162, W 0.2 +0.0164 (seeds 1-5 +0.0156 vs +0.0156). Picked per question term instead (term-to-term
through the documents: each term's IDF shared among the documents helpful for learned questions with that
term), share >= 3, 5 documents, 10 words, W 0.3 (seeds 1-3: share >= 2 +0.0109, W 0.2 +0.0124, share >= 3
+0.0163, W 0.5 +0.0159, share >= 4 +0.0160): seeds 1-5 +0.0178 [+0.0104, +0.0276] vs +0.0156 [+0.0088,
+0.0219]; held-out seeds 1-3, same runs: CISI +0.0043 vs +0.0015, CACM +0.0240 vs +0.0250: not kept (lower
on CACM, and short of +0.02). The same with documents marked not helpful subtracting half their words'
weight (Rocchio): Cranfield seeds 1-5 +0.0188 [+0.0129, +0.0277] vs +0.0156 (without it: +0.0184); held-out
seeds 1-3 (a second look, same runs): CISI +0.0044 vs +0.0015, CACM +0.0240 vs +0.0250: not kept either.
Asked-again questions, seeds 1-5: +0.237 to +0.244 with these variants, +0.226 with this rule.

With neighbours (search/neighbours.py) after this rule, Cranfield seeds 1-5, unseen half, this rule +0.0125
(2026-11-26, each variant a prototype run beside it): a ranking setting learned from all feedback (neighbour
weight 0-0.6, 3 or 5 neighbours, PRF on or off: the one ranking the helpful documents best over the feedback
questions, learned boosts off) +0.0176, but re-ranking offline over 10 splits, held-out CACM -0.0135 (26
feedback questions pick a worse setting; +0.0028 on Cranfield once a paired t >= 2 is required); co-helpful
documents (one among the question's 10 best lifts the others helpful for the same past question) B 0.1
+0.0137, 0.2 +0.0130, 0.5 +0.0003; result overlap (a past question whose recorded 10 best share >= 5 with the
question's first 10 lends its helpful documents 0.3 x the overlap, the larger of that and this rule) +0.0160,
held-out CISI +0.0009 vs +0.0008 and CACM +0.0133 vs +0.0154; a multiplicative boost (score x (1 + c x
boost)) c 1 +0.0076, c 3 +0.0061. The ceiling (every document helpful for a feedback question and relevant
to the new one moved to the top) is +0.179: 60-70% of unseen questions have one among ~330 helpful
documents; choosing which is the gap, and these signals overlap (each +0.008-0.013 alone).

Three more families, tried in a plain BM25 sandbox first (Snowball stems, Cranfield seeds 1-5, unseen half,
feedback as bench/feedback_eval.py's; this rule there, weight 0.5: +0.0185): per-term weights learned from
feedback (a question term that helpful documents hold more often than not-helpful ones weighs more,
Robertson/Sparck Jones odds, clipped) +0.0061 at best; past helpful questions indexed as a field of their
documents (document expansion) +0.0110, and +0.0144 beside this rule; a logistic ranker over this rule's
similarity, the document's own score and rank, fitted leave-one-out on the feedback questions, +0.0159. None
beat this rule, so none was built into the query path (2026-11-26).
The boost of a similar question taken from the all-MiniLM-L6-v2 cosine of the two questions instead of their
terms (``max(0, (cos - c) / (1 - c))``): sandbox Cranfield +0.0225 at c 0.4 (this rule +0.0185), but through the
query path (bench/feedback_eval.py, seeds 1-5, this rule +0.0125 in the same session) c 0.3 +0.0054, 0.4 +0.0102,
0.5 +0.0099: not built (2026-11-27).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

from kb_indexer.learn.learner import ASSOC_MIN_OVERLAP, question_terms
from kb_indexer.store.connection import plain_rows, round_trips
from kb_indexer.store.dbapi import Connection

NEIGHBOUR_MIN = 0.1    # similarity of question terms below which nothing carries over to another question


def association_boosts(conn: Connection, question: str) -> dict[int, dict[str, Any]]:
    """Learned associations that fire for this question: doc id -> {"boost", "learned_ids"}."""
    if not round_trips(conn) and conn.execute(
            "SELECT 1 FROM learned_items WHERE kind = 'association' AND status = 'active' LIMIT 1").fetchone() is None:
        return {}   # nothing learned yet (most indexes): the question is not parsed again (on a server: a round trip)
    terms = question_terms(question)
    if not terms:
        return {}
    rows = list(plain_rows(   # hundreds of rows once many associations are learned: plain tuples
        conn, f"SELECT li.id, li.document_id, li.weight, li.size, lt.term, ({_ACTIVE}) FROM learned_terms lt "
        "JOIN learned_items li ON li.id = lt.learned_id AND li.status = 'active' AND li.weight <> 0 "
        "WHERE lt.term IN (SELECT value FROM json_each(?))", (json.dumps(terms),)))
    if not rows:
        return {}
    items: dict[int, tuple[int, float | None, int | None, list[str]]] = {}   # id -> (doc, weight, size, shared)
    per_term: dict[str, int] = defaultdict(int)
    for lid, doc, weight, size, term, _ in rows:   # by position: a name look-up per row and column costs more
        it = items.get(lid)
        if it is None:
            items[lid] = (doc, weight, size, [term])
        else:
            it[3].append(term)
        per_term[term] += 1
    idf = _idf(int(rows[0][5]), terms, per_term)   # the active associations, counted in the same statement
    question_idf = sum(idf.values())   # the same for every association: summed once
    fired: dict[int, list[tuple[float, int]]] = defaultdict(list)   # doc -> (lift, learned id)
    for lid in sorted(items):
        doc, weight, size, shared = items[lid]
        boost = _boost(weight, size, shared, terms, idf, question_idf)
        if boost:
            fired[doc].append((boost, lid))
    return {d: lift(lifts) for d, lifts in fired.items()}


def lift(lifts: list[tuple[float, int]]) -> dict[str, Any]:
    """One document's learned boost for a question from the (lift, learned id) of each association that fires
    for it: the strongest helpful lift (of the same, a near-identical or a similar question) plus the strongest
    not-helpful one (the same or a near-identical question), never a sum of several. A lift is a weight
    (``|weight| < 1``) times an overlap or similarity (``<= 1``), so the boost stays within (-1, +1) however
    many associations carry it (each part capped at 1 too: a crafted index's weight). ``learned_ids``: the
    associations whose lift is in the boost (the first learned on a tie)."""
    up = max((x for x in lifts if x[0] > 0), key=lambda x: x[0], default=None)
    down = min((x for x in lifts if x[0] < 0), key=lambda x: x[0], default=None)
    boost = (min(1.0, up[0]) if up else 0.0) + (max(-1.0, down[0]) if down else 0.0)
    return {"boost": boost, "learned_ids": sorted(x[1] for x in (up, down) if x is not None)}


# Withdrawn associations (weight 0) count for nothing, not even in the IDF: undone, they leave the ranking as
# it was before them.
_ACTIVE = "SELECT COUNT(*) FROM learned_items WHERE kind = 'association' AND status = 'active' AND weight <> 0"


def _idf(n: int, terms: list[str], per_term: dict[str, int]) -> dict[str, float]:
    """Each question term's IDF over the ``n`` active associations (a term none has: the largest)."""
    return {t: math.log(1.0 + max(n, 1) / max(per_term.get(t, 0), 0.5)) for t in terms}


def _boost(weight: float | None, size: int | None, shared: list[str], terms: list[str], idf: dict[str, float],
           question_idf: float) -> float:
    """How one association (``weight``, its question's ``size`` in terms, the ``shared`` terms) lifts a
    question with ``terms`` (``question_idf``: the sum of their ``idf``) as the same or a similar question;
    0: it does not fire."""
    if not weight:
        return 0.0
    n_shared = len(shared)
    size = max(size or 0, n_shared)   # never fewer terms than it shares with the question (a crafted index)
    overlap = n_shared / (size + len(terms) - n_shared)
    if overlap >= ASSOC_MIN_OVERLAP:
        return float(weight * overlap)
    if weight < 0:
        return 0.0
    sim = similarity(sum(idf[t] for t in shared), question_idf, len(terms), size - n_shared)
    return float(weight * sim) if sim >= NEIGHBOUR_MIN else 0.0


def similarity(shared_idf: float, question_idf: float, n_terms: int, unshared: int) -> float:
    """IDF-weighted Ochiai coefficient of two term sets (1 for the same set, 0 for disjoint ones): the shared
    terms' IDF mass over the geometric mean of both sets' masses, the other set's unshared terms counted at
    the question's mean IDF."""
    if shared_idf <= 0 or question_idf <= 0:
        return 0.0
    other = shared_idf + unshared * question_idf / max(n_terms, 1)
    return shared_idf / math.sqrt(question_idf * other)
