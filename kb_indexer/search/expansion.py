"""Keyword expansion: breadth-first over the typed similarity graph.

Each user keyword is expanded separately (so every expanded keyword can be
traced back to the user keyword that found it). A path's weight is the product,
over its relations, of ``type weight x relation score x context factor``,
times ``HOP_DECAY`` for every hop after the first. A keyword is kept when its
best path weighs at least the threshold, and only kept keywords are expanded
further, up to ``depth`` hops.

Default type weights, in the spirit of Lucene/Solr query-time synonym practice
(an equivalent term is as good as the original; a narrower term is most of
the way there; associated terms are worth about half; a broader term adds
general context, the design's "include for general context"; an opposite
helps only when the question compares):

=================  ======  ==========================================
type               weight  why
=================  ======  ==========================================
synonym            1.0     same meaning
abbreviation       1.0     same meaning, other spelling
narrower           0.8     a specific case of what was asked for
related_concept    0.5     same domain, different concept
application        0.5     a use of the concept (examples)
component          0.5     a part of the concept
prerequisite       0.5     background for the concept
broader            0.5     the general field: general context
contrast           0       an opposite concept: 1.0 when comparing
=================  ======  ==========================================

With the default minimum weight (0.35) that keeps synonyms and abbreviations,
narrower relations with score >= 0.44, and the associated types and broader
relations with score >= 0.7 -- at an expansion weight of 0.35 to 0.5, so a
document found only through a broader term ranks below the direct matches.

Contrast: "usually exclude unless comparing" (the design). Its weight is 0,
so it never expands, unless the question is a comparison (:func:`is_comparison`:
"A vs B", "versus", "compare", "difference between", "비교", "차이") or
``--types`` names contrast; then it is ``COMPARISON_CONTRAST_WEIGHT``. An
explicit ``--weight contrast=W`` sets it in every case.

Direction: an undirected relation expands both ways; a directional one only
from its source side (``reinforcement learning -> alphago`` expands
"reinforcement learning" to "alphago", never the reverse).

Cycles are harmless: a keyword is revisited only on a strictly better path,
depth bounds the walk, and iteration order is sorted, so the output is
deterministic.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from kb_indexer.errors import UsageError
from kb_indexer.search.context import ContextScorer, as_list, context_factor, lexical_scores
from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD, DEFAULT_DEPTH, DEFAULT_THRESHOLD, MAX_DEPTH
from kb_indexer.store.similarities import SIMILARITY_TYPES, check_similarity_type
from kb_indexer.store.dbapi import Connection, Row

DEFAULT_TYPE_WEIGHTS: dict[str, float] = {
    "synonym": 1.0,
    "abbreviation": 1.0,
    "narrower": 0.8,
    "related_concept": 0.5,
    "application": 0.5,
    "component": 0.5,
    "prerequisite": 0.5,
    "broader": 0.5,
    "contrast": 0.0,
}
COMPARISON_CONTRAST_WEIGHT = 1.0   # contrast's weight for a comparison question or --types contrast
_COMPARISON = re.compile(
    r"\b(?:vs\.?|versus|compar(?:e|ed|es|ing|ison|isons)|contrast(?:ed|ing|s)?(?:\s+\S+){0,4}?\s+(?:with|to|between|and)|"
    r"differences?\s+between|differ(?:s|ed)?\s+from|better\s+than|(?:pros\s+and\s+cons))(?!\w)"
    r"|비교|차이", re.IGNORECASE)
HOP_DECAY = 0.8
_EPS = 1e-9


@dataclass
class Expansion:
    """The best path from a user keyword to an expanded keyword."""
    user_keyword: str          # normalised user keyword (expansion_map key)
    keyword: str               # normalised expanded keyword
    keyword_id: int
    weight: float
    hops: int
    relation_id: int           # last relation on the path
    similarity_type: str
    relation_score: float
    via: str                   # the keyword this hop expanded from
    context_match: float | None
    path: list[int] = field(default_factory=list)   # relation ids, seed first

    def to_dict(self) -> dict[str, Any]:
        out = {"user_keyword": self.user_keyword, "keyword": self.keyword, "weight": round(self.weight, 4),
               "hops": self.hops, "via": self.via, "relation_id": self.relation_id,
               "similarity_type": self.similarity_type, "relation_score": self.relation_score,
               "path": self.path}
        if self.context_match is not None:
            out["context_match"] = round(self.context_match, 4)
        return out


def is_comparison(text: str | None) -> bool:
    """Does the question compare things ("A vs B", "compare A and B", "difference between", "versus", 비교, 차이)?"""
    return bool(text) and _COMPARISON.search(text or "") is not None


def resolve_weights(overrides: dict[str, float] | None = None, contrast: bool = False) -> dict[str, float]:
    """The type weights: defaults, contrast's comparison weight when ``contrast``, then ``overrides``."""
    weights = dict(DEFAULT_TYPE_WEIGHTS)
    if contrast:
        weights["contrast"] = COMPARISON_CONTRAST_WEIGHT
    for t, w in (overrides or {}).items():
        check_similarity_type(t, " in weights")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= float(w) <= 1.0:
            raise UsageError(f"Weight for {t} must be a number between 0 and 1, got {w!r}")
        weights[t] = float(w)
    return weights


def parse_weight_options(values: Iterable[str]) -> dict[str, float]:
    """``["narrower=0.9", "broader=0"]`` -> ``{"narrower": 0.9, "broader": 0.0}`` (for the CLI)."""
    out: dict[str, float] = {}
    for v in values:
        for item in str(v).split(","):
            if not item.strip():
                continue
            name, sep, num = item.partition("=")
            if not sep:
                raise UsageError(f"--weight expects TYPE=WEIGHT, got {item!r}")
            try:
                out[name.strip()] = float(num)
            except ValueError:
                raise UsageError(f"--weight {item!r}: {num!r} is not a number") from None
    return out


def resolve_types(types: Iterable[str] | None) -> set[str] | None:
    if not types:
        return None
    chosen = set()
    for t in types:
        for name in str(t).split(","):
            name = name.strip()
            if not name:
                continue
            chosen.add(check_similarity_type(name))
    return chosen or None


_EDGE_SQL = """
SELECT s.id, s.keyword_id_1, s.keyword_id_2, s.similarity_type, s.context, s.score, s.directional,
       s.source_keyword_id,
       (SELECT keyword FROM keywords WHERE id = s.keyword_id_1) AS kw1,
       (SELECT keyword FROM keywords WHERE id = s.keyword_id_2) AS kw2
FROM keyword_similarities s
WHERE (s.keyword_id_1 IN (SELECT value FROM json_each(:ids)) OR s.keyword_id_2 IN (SELECT value FROM json_each(:ids)))
"""


def _edges_from(conn: Connection, node_ids: set[int],
                allowed: set[str]) -> dict[int, list[tuple[int, str, Row]]]:
    """Relations usable from each node: ``node -> [(other_id, other_keyword, row), ...]`` in id order."""
    out: dict[int, list[tuple[int, str, Row]]] = {}
    if not node_ids:
        return out
    rows = conn.execute(_EDGE_SQL + " ORDER BY s.id", {"ids": json.dumps(sorted(node_ids))}).fetchall()
    for r in rows:
        if r["similarity_type"] not in allowed:
            continue
        for here, there, there_kw in ((r["keyword_id_1"], r["keyword_id_2"], r["kw2"]),
                                      (r["keyword_id_2"], r["keyword_id_1"], r["kw1"])):
            if here not in node_ids:
                continue
            if r["directional"] and r["source_keyword_id"] != here:
                continue  # a directional relation expands only from its source side
            out.setdefault(here, []).append((there, there_kw, r))
    return out


def expand(conn: Connection, seeds: list[tuple[str, int | None]], *, depth: int = DEFAULT_DEPTH,
           threshold: float = DEFAULT_THRESHOLD, types: set[str] | None = None,
           weights: dict[str, float] | None = None, context: str | None = None,
           context_scorer: ContextScorer | None = None,
           context_threshold: float = DEFAULT_CONTEXT_THRESHOLD) -> list[Expansion]:
    """Expand ``seeds`` (``(normalised user keyword, keyword id or None)``); best path per pair.
    ``threshold`` is the minimum expansion weight; ``context_threshold`` the context-match score from
    which a relation fits ``context`` (see :func:`kb_indexer.search.context.context_factor`).

    Returns expansions ordered by seed order, then weight (desc), then keyword.
    """
    if depth < 0 or depth > MAX_DEPTH:
        raise UsageError(f"expand depth must be between 0 and {MAX_DEPTH}, got {depth}")
    if not 0.0 <= threshold <= 1.0:
        raise UsageError(f"threshold must be between 0 and 1, got {threshold}")
    weights = weights or DEFAULT_TYPE_WEIGHTS
    allowed = {t for t in (types or SIMILARITY_TYPES) if weights.get(t, 0.0) > 0}
    order = {s: i for i, (s, _) in enumerate(seeds)}
    seed_ids = {s: kid for s, kid in seeds if kid is not None}
    best: dict[tuple[str, int], Expansion] = {}
    # frontier: (seed, node id, node keyword) -> (path weight, path)
    frontier: dict[tuple[str, int], tuple[float, str, list[int]]] = {
        (s, kid): (1.0, s, []) for s, kid in seed_ids.items()}
    use_context = bool(context and context.strip())
    scorer = context_scorer or lexical_scores
    matches: dict[int, float] = {}
    for hop in range(1, depth + 1):
        if not frontier or not allowed:
            break
        edges = _edges_from(conn, {node for _, node in frontier}, allowed)
        decay = HOP_DECAY if hop > 1 else 1.0   # so a path of h hops decays by HOP_DECAY ** (h - 1)
        if use_context and context:
            _score_contexts(context, frontier, edges, weights, threshold, decay, scorer, matches)
        updated: dict[tuple[str, int], tuple[float, str, list[int]]] = {}
        for (seed, node) in sorted(frontier, key=lambda k: (order[k[0]], k[1])):
            w_path, node_kw, path = frontier[(seed, node)]
            for other, other_kw, r in edges.get(node, ()):
                if other == seed_ids[seed]:
                    continue
                match = matches.get(r["id"]) if use_context else None
                factor = context_factor(match, context_threshold) if match is not None else 1.0
                w = w_path * weights[r["similarity_type"]] * float(r["score"]) * factor * decay
                if w + _EPS < threshold:
                    continue
                key = (seed, other)
                cur = best.get(key)
                if cur is not None and w <= cur.weight + _EPS:
                    continue
                new_path = path + [r["id"]]
                best[key] = Expansion(seed, other_kw, other, w, hop, r["id"], r["similarity_type"],
                                      float(r["score"]), node_kw, match, new_path)
                updated[key] = (w, other_kw, new_path)
        frontier = updated
    return sorted(best.values(), key=lambda e: (order[e.user_keyword], -round(e.weight, 9), e.keyword))


def _score_contexts(context: str, frontier: dict[tuple[str, int], tuple[float, str, list[int]]],
                    edges: dict[int, list[tuple[int, str, Row]]], weights: dict[str, float], threshold: float,
                    decay: float,
                    scorer: ContextScorer, matches: dict[int, float]) -> None:
    """Score (once, in one batch) every relation of this hop that could still pass the threshold."""
    todo: dict[int, dict[str, Any]] = {}
    for (seed, node), (w_path, node_kw, _) in frontier.items():
        for _other, other_kw, r in edges.get(node, ()):
            if r["id"] in matches or r["id"] in todo:
                continue
            best_case = w_path * weights[r["similarity_type"]] * float(r["score"]) * decay
            if best_case + _EPS < threshold:
                continue  # even a perfect context match could not keep it
            todo[r["id"]] = {"id": r["id"], "keyword": other_kw, "source": node_kw,
                             "similarity_type": r["similarity_type"], "context": r["context"],
                             "score": float(r["score"])}
    if not todo:
        return
    cands = [todo[i] for i in sorted(todo)]
    for c, s in zip(cands, as_list(scorer(context, cands), cands)):
        matches[c["id"]] = s


def expansion_map(seeds: list[tuple[str, int | None]], expansions: list[Expansion]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {s: [] for s, _ in seeds}
    for e in expansions:
        out[e.user_keyword].append(e.keyword)
    return out


#: An expansion this strong (a synonym or abbreviation of score >= 0.8, a close narrower term) that tags no
#: document is searched in the full text too; weaker ones (broader, related: "machine learning" for
#: "reinforcement learning") would bring documents of other topics.
UNTAGGED_MIN_WEIGHT = 0.8


def untagged(conn: Connection, expansions: list[Expansion]) -> list[str]:
    """The strong expanded keywords no document is tagged with, in expansion order: searched in the full text
    too (in a knowledge base nobody tagged, `relate k8s kubernetes` finds the notes that say Kubernetes)."""
    strong = [e for e in expansions if e.weight >= UNTAGGED_MIN_WEIGHT]
    if not strong:
        return []
    kids = sorted({e.keyword_id for e in strong})
    tagged = {r[0] for r in conn.execute("SELECT DISTINCT keyword_id FROM document_keywords WHERE keyword_id IN "
                                         "(SELECT value FROM json_each(?))", (json.dumps(kids),))}
    return list(dict.fromkeys(e.keyword for e in strong if e.keyword_id not in tagged))
