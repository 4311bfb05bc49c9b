"""One query's candidate documents as plain numbers per document, fused and cut to the results first.

A popular tag, or a keyword whose expansions are popular, finds thousands of documents; full text can
match most of a large index. Every one of them needs its fused score to know which are the best, but
only the results need their evidence (which tag, which expansion, why) as objects. So the channels
fill dictionaries here (tag rows, bm25, cosine, learned boost), :func:`kb_indexer.search.fusion.fuse`
scores them all, :func:`select` keeps the best ``limit`` (and every document tied with the last), and
:meth:`Pool.candidates` builds :class:`~kb_indexer.search.fusion.Candidate` objects for those alone.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field

from kb_indexer.search.expansion import Expansion
from kb_indexer.search.fusion import EXPANSION_FACTOR, Candidate, Evidence
from kb_indexer.store.connection import plain_all
from kb_indexer.store.dbapi import Connection


@dataclass
class TagHits:
    """Documents tagged with a user keyword (exact) or one of its expansions, with their keyword parts."""

    by_kid: dict[int, list[tuple[str, Expansion | None]]] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    parts: dict[int, float] = field(default_factory=dict)   # doc -> keyword part, ascending doc ids
    conn: Connection | None = None

    @classmethod
    def load(cls, conn: Connection, seeds: list[tuple[str, int | None]], expansions: list[Expansion],
             n_user_keywords: int) -> TagHits:
        """Every tagged document's keyword part, computed by SQLite: per user keyword the best evidence value
        (exact: the tag's weight; expansion: ``expansion weight × EXPANSION_FACTOR × tag weight``), summed in
        user-keyword order, divided by the number of user keywords, at most 1 (0 without user keywords)."""
        hits = cls(conn=conn)
        for n, kid in seeds:
            if kid is not None:
                hits.by_kid.setdefault(kid, []).append((n, None))
                hits.names[kid] = n
        for e in expansions:
            hits.by_kid.setdefault(e.keyword_id, []).append((e.user_keyword, e))
        if not hits.by_kid:
            return hits
        order = {n: i for i, (n, _) in enumerate(seeds)}
        # an exact tag's factor is 1.0 (1.0 × weight is the weight, exactly): a column of numbers on both engines
        # (PostgreSQL reads a VALUES column of NULLs only as text, which it does not multiply)
        factors = [(kid, order[seed], 1.0 if e is None else e.weight * EXPANSION_FACTOR)
                   for kid, pairs in hits.by_kid.items() for seed, e in pairs]
        used = sorted({f[1] for f in factors})
        # one term per user keyword: its best value in the document (0 when it has none); no Python per tagged
        # document (only integers we make reach the SQL)
        best = " + ".join(f"coalesce(max(CASE f.seed WHEN {i} THEN f.factor * dk.weight END), "
                          "0.0)" for i in used)
        part = f"min(1.0, ({best}) / {int(n_user_keywords)})" if n_user_keywords > 0 else "0.0"
        values = ", ".join(["(?, ?, ?)"] * len(factors))
        hits.parts = dict(plain_all(conn, f"WITH f(kid, seed, factor) AS (VALUES {values}) SELECT dk.document_id, "
                                    f"{part} FROM document_keywords dk JOIN f ON f.kid = dk.keyword_id "
                                    "GROUP BY dk.document_id ORDER BY dk.document_id",
                                    [x for row in factors for x in row]))
        return hits

    def evidence(self, doc_ids: list[int]) -> dict[int, list[Evidence]]:
        """The evidence rows of the given documents (tag rows in the order they were written)."""
        out: dict[int, list[Evidence]] = {d: [] for d in doc_ids}
        wanted = [d for d in doc_ids if d in self.parts]
        if not wanted or self.conn is None:
            return out
        rows = self.conn.execute("SELECT document_id, keyword_id, weight FROM document_keywords WHERE document_id IN "
                                 "(SELECT value FROM json_each(?)) AND keyword_id IN (SELECT value FROM json_each(?)) "
                                 "ORDER BY document_id, id", (json.dumps(wanted), json.dumps(sorted(self.by_kid))))
        for doc_id, kid, tag_weight in rows:  # tag_weight < 1 only for tags learned from little evidence
            for seed, e in self.by_kid[kid]:
                if e is None:
                    out[doc_id].append(Evidence(seed, self.names[kid], "exact", tag_weight))
                else:
                    out[doc_id].append(Evidence(seed, e.keyword, "expansion", e.weight * EXPANSION_FACTOR * tag_weight,
                                                e.weight, e.similarity_type, e.relation_id, e.via, e.context_match))
        return out


@dataclass
class Pool:
    """The candidates of one query: document ids in the order they were found, and what each channel said."""

    tags: TagHits
    docs: dict[int, None] = field(default_factory=dict)     # an ordered set
    bm25: dict[int, float] = field(default_factory=dict)
    cosine: dict[int, float] = field(default_factory=dict)
    semantic: set[int] = field(default_factory=set)
    learned: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.docs.update(dict.fromkeys(self.tags.parts))

    def add(self, doc_id: int) -> None:
        self.docs.setdefault(doc_id, None)

    def candidates(self, ids: list[int], parts: dict[str, dict[int, float]],
                   scores: dict[int, float]) -> dict[int, Candidate]:
        """Candidate objects (evidence included) of ``ids`` only."""
        evidence = self.tags.evidence(ids)
        return {d: Candidate(d, evidence[d], self.bm25.get(d), self.cosine.get(d), d in self.semantic,
                             parts["keyword"].get(d, 0.0), parts["fulltext"].get(d, 0.0),
                             parts["dense"].get(d, 0.0), self.learned.get(d, 0.0), scores[d]) for d in ids}


def select(scores: dict[int, float], limit: int) -> list[int]:
    """The ids of the ``limit`` best scores (0: all) and of every score tied with the last at 9 decimals
    (ties are ordered by filepath later, so the kept set never depends on how a tie was broken)."""
    if not limit or len(scores) <= limit:
        return list(scores)
    cutoff = round(heapq.nlargest(limit, scores.values())[-1], 9)
    near = cutoff - 1e-8   # rounding moves a score by at most 5e-10: compare rounded values near the cut only
    return [d for d, s in scores.items() if s >= near and round(s, 9) >= cutoff]
