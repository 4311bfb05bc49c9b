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
``NEIGHBOUR_MIN`` was tuned on Cranfield only (unseen half, mean nDCG@10 change): flat from 0.0 to 0.15, lower
above; 0.1 keeps the optimum and leaves out the faintest matches (each would add a candidate to score). Summing
the boosts of similar questions instead of taking the largest scored lower. The other rules measured against this
one, and why none was kept: docs/learning.md, "What was tried and not kept".
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
