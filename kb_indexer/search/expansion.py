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

import heapq
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from kb_indexer.errors import UsageError
from kb_indexer.search.context import ContextScorer, as_list, context_factor, lexical_scores
from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD, DEFAULT_DEPTH, DEFAULT_THRESHOLD, MAX_DEPTH, MAX_EXPANSIONS
from kb_indexer.store.similarities import SIMILARITY_TYPES, check_similarity_type
from kb_indexer.store.connection import plain_rows
from kb_indexer.store.dbapi import Connection

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


# A relation's fields an expansion reads: (id, similarity type, context, score)
_Relation = tuple[int, str, str, float]


def _edges_from(conn: Connection, node_ids: set[int],
                allowed: set[str]) -> dict[int, list[tuple[int, str, _Relation]]]:
    """Relations usable from each node: ``node -> [(other_id, other_keyword, relation), ...]`` in id order
    (plain tuples: a keyword may have tens of thousands of relations)."""
    out: dict[int, list[tuple[int, str, _Relation]]] = {}
    if not node_ids:
        return out
    rows = plain_rows(conn, _EDGE_SQL + " ORDER BY s.id", {"ids": json.dumps(sorted(node_ids))})
    for sid, k1, k2, sim_type, ctx, score, directional, source, kw1, kw2 in rows:
        if sim_type not in allowed:
            continue
        rel = (sid, sim_type, ctx, float(score))
        for here, there, there_kw in ((k1, k2, kw2), (k2, k1, kw1)):
            if here not in node_ids:
                continue
            if directional and source != here:
                continue  # a directional relation expands only from its source side
            out.setdefault(here, []).append((there, there_kw, rel))
    return out


class Expansions(list[Expansion]):
    """The expansions :func:`expand` kept (a list), and ``omitted``: per user keyword that had more than
    ``limit``, how many more passed the minimum weight than were kept."""

    def __init__(self, kept: Iterable[Expansion] = (), omitted: dict[str, int] | None = None):
        super().__init__(kept)
        self.omitted: dict[str, int] = omitted or {}


_Key = tuple[str, int]   # (user keyword, keyword id)
# The keywords one hop expands from: (path weight, keyword, path)
_Frontier = dict[_Key, tuple[float, str, list[int]]]
# A relation a frontier keyword may expand through: (other id, other keyword, path weight x type weight x
# relation score, the relation); x the hop's decay, that is its weight before the context factor (at most 1).
_Step = tuple[int, str, float, _Relation]
# The best path to a keyword so far: (weight, keyword, hops, relation, keyword expanded from, context match,
# path); an Expansion is made of it only if it is kept
_Best = tuple[float, str, int, _Relation, str, "float | None", list[int]]


def expand(conn: Connection, seeds: list[tuple[str, int | None]], *, depth: int = DEFAULT_DEPTH,
           threshold: float = DEFAULT_THRESHOLD, types: set[str] | None = None,
           weights: dict[str, float] | None = None, context: str | None = None,
           context_scorer: ContextScorer | None = None,
           context_threshold: float = DEFAULT_CONTEXT_THRESHOLD, limit: int = MAX_EXPANSIONS) -> Expansions:
    """Expand ``seeds`` (``(normalised user keyword, keyword id or None)``); best path per pair.
    ``threshold`` is the minimum expansion weight; ``context_threshold`` the context-match score from
    which a relation fits ``context`` (see :func:`kb_indexer.search.context.context_factor`).

    Keeps the strongest ``limit`` expansions of each user keyword (ties by keyword; the result's ``omitted``
    counts the rest). Only those are expanded further: a keyword past the cut weighs less than every kept
    one, and so does all it leads to (a hop never adds weight). With a context, only the relations that
    could still make the cut are judged. So a hop's work grows with the relations it reads, never with
    their square, and what is kept is what an uncapped walk would rank first.

    Returns expansions ordered by seed order, then weight (desc), then keyword.
    """
    if depth < 0 or depth > MAX_DEPTH:
        raise UsageError(f"expand depth must be between 0 and {MAX_DEPTH}, got {depth}")
    if not 0.0 <= threshold <= 1.0:
        raise UsageError(f"threshold must be between 0 and 1, got {threshold}")
    weights = weights or DEFAULT_TYPE_WEIGHTS
    allowed = {t for t in (types or SIMILARITY_TYPES) if weights.get(t, 0.0) > 0}
    use_context = bool(context and context.strip())
    walk = _Walk(seeds, weights, threshold, limit, context if use_context else None,
                 context_scorer or lexical_scores, context_threshold)
    frontier: _Frontier = {(s, kid): (1.0, s, []) for s, kid in walk.seed_ids.items()}
    for hop in range(1, depth + 1):
        if not frontier or not allowed:
            break
        updated = walk.hop(frontier, _edges_from(conn, {node for _, node in frontier}, allowed), hop)
        frontier = updated if hop < depth else {}
    return walk.strongest()


class _Walk:
    """One expansion walk: the best path found so far to each of the strongest ``limit`` keywords of each user
    keyword (the rest are only counted, :attr:`reached`), and the context-match score of every relation judged.

    A keyword past its user keyword's cut after a hop weighs less than the ``limit`` kept, and the cut only
    rises, so forgetting its path changes nothing kept: a later, better path brings it back to compete. So a
    walk holds ``limit`` paths per user keyword, not one per keyword reached (a hub of 100,000 relations two
    hops away, from each of 100 user keywords, was 10 million paths and gigabytes)."""

    def __init__(self, seeds: list[tuple[str, int | None]], weights: dict[str, float], threshold: float, limit: int,
                 context: str | None, scorer: ContextScorer, context_threshold: float):
        self.order = {s: i for i, (s, _) in enumerate(seeds)}
        self.seed_ids = {s: kid for s, kid in seeds if kid is not None}
        self.weights, self.threshold, self.limit = weights, threshold, limit
        self.context, self.scorer, self.context_threshold = context, scorer, context_threshold
        self.best: dict[str, dict[int, _Best]] = {}   # user keyword -> keyword id -> its best path
        self.reached: dict[str, set[int]] = {}        # user keyword -> every keyword id that passed the weight
        self.matches: dict[int, float] = {}

    def hop(self, frontier: _Frontier, edges: dict[int, list[tuple[int, str, _Relation]]], hop: int) -> _Frontier:
        """One hop from ``frontier``: the keywords it reached by a better path than before that are within their
        user keyword's cut (the next frontier). Without a context each user keyword's relations are listed in
        turn (with one, the scorer judges the hop's relations of every user keyword in one batch)."""
        decay = HOP_DECAY if hop > 1 else 1.0   # so a path of h hops decays by HOP_DECAY ** (h - 1)
        judged = None
        if self.context is not None:
            judged = self._steps(frontier, edges, decay)
            self._judge(frontier, judged, decay)
        by_seed: dict[str, list[_Key]] = {}
        for key in sorted(frontier, key=lambda k: (self.order[k[0]], k[1])):
            by_seed.setdefault(key[0], []).append(key)
        updated: _Frontier = {}
        for seed, keys in by_seed.items():
            steps = judged if judged is not None else self._steps({k: frontier[k] for k in keys}, edges, decay)
            fresh = self._reach(seed, keys, frontier, steps, decay, hop)
            kept = self._cut(seed)
            updated.update((k, v) for k, v in fresh.items() if k[1] in kept)
        return updated

    def _reach(self, seed: str, keys: list[_Key], frontier: _Frontier, steps: dict[_Key, list[_Step]],
               decay: float, hop: int) -> _Frontier:
        """The keywords ``seed``'s frontier ``keys`` reach by a better path than before (their best path noted)."""
        best = self.best.setdefault(seed, {})
        reached = self.reached.setdefault(seed, set())
        fresh: _Frontier = {}
        for key in keys:
            _, node_kw, path = frontier[key]
            for other, other_kw, base, rel in steps.get(key, ()):
                match = self.matches.get(rel[0]) if self.context is not None else None
                if self.context is not None and match is None:
                    continue   # not judged: it could not pass the minimum weight or make the cut
                factor = context_factor(match, self.context_threshold) if match is not None else 1.0
                w = base * factor * decay
                if w + _EPS < self.threshold:
                    continue
                cur = best.get(other)
                if cur is not None and w <= cur[0] + _EPS:
                    continue
                new_path = path + [rel[0]]
                best[other] = (w, other_kw, hop, rel, node_kw, match, new_path)
                reached.add(other)
                fresh[(seed, other)] = (w, other_kw, new_path)
        return fresh

    def _cut(self, seed: str) -> dict[int, _Best]:
        """Keep only ``seed``'s strongest ``limit`` paths; returns them."""
        best = self.best.get(seed, {})
        if len(best) > self.limit:
            top = heapq.nsmallest(self.limit, best.items(), key=lambda item: _strength(item[1]))
            best = self.best[seed] = dict(top)
        return best

    def _steps(self, frontier: _Frontier, edges: dict[int, list[tuple[int, str, _Relation]]],
               decay: float) -> dict[_Key, list[_Step]]:
        """Per frontier keyword (in the frontier's order), the relations it may expand through that could pass
        the minimum weight (a context fit only lowers a weight), each keyword's in relation id order."""
        out: dict[_Key, list[_Step]] = {}
        for (seed, node), (w_path, _, _) in frontier.items():
            steps = []
            for other, other_kw, rel in edges.get(node, ()):
                if other == self.seed_ids[seed]:
                    continue
                base = w_path * self.weights[rel[1]] * rel[3]
                if base * decay + _EPS >= self.threshold:
                    steps.append((other, other_kw, base, rel))
            out[(seed, node)] = steps
        return out

    def strongest(self) -> Expansions:
        """The strongest ``limit`` expansions of each user keyword, in seed order, and the number left out."""
        kept: list[Expansion] = []
        omitted: dict[str, int] = {}
        for seed, best in sorted(self.best.items(), key=lambda item: self.order[item[0]]):
            for kid, found in sorted(best.items(), key=lambda item: _strength(item[1])):
                w, kw, hops, rel, via, match, path = found
                kept.append(Expansion(seed, kw, kid, w, hops, rel[0], rel[1], rel[3], via, match, path))
            if len(self.reached[seed]) > len(best):
                omitted[seed] = len(self.reached[seed]) - len(best)
        return Expansions(kept, omitted)

    def _judge(self, frontier: _Frontier, steps: dict[_Key, list[_Step]], decay: float) -> None:
        """Score the context fit of this hop's relations that could still make their user keyword's strongest
        ``limit``: in one batch when no user keyword has more than ``limit`` of them (so for every query that
        names no keyword with hundreds of relations); else the strongest first, in rounds of twice the size,
        until the ``limit``-th best weight known exceeds what every relation left could weigh (a context fit
        only lowers a weight): those could change nothing kept, and are not judged."""
        candidates: dict[int, dict[str, Any]] = {}
        pending: dict[str, list[tuple[float, int]]] = {}   # user keyword -> [(weight before the context, id)]
        for (seed, node), found in steps.items():
            for _other, other_kw, base, (rid, sim_type, ctx, score) in found:
                candidates.setdefault(rid, {"id": rid, "keyword": other_kw, "source": frontier[(seed, node)][1],
                                            "similarity_type": sim_type, "context": ctx, "score": score})
                if rid not in self.matches:
                    pending.setdefault(seed, []).append((base * decay, rid))
        for todo in pending.values():
            todo.sort(key=lambda t: (-t[0], t[1]))
        size = self.limit
        while pending:
            batch = sorted({rid for todo in pending.values() for _, rid in todo[:size]} - self.matches.keys())
            if batch and self.context is not None:
                cands = [candidates[rid] for rid in batch]
                for c, score in zip(cands, as_list(self.scorer(self.context, cands), cands)):
                    self.matches[c["id"]] = score
            pending = {seed: rest for seed, todo in pending.items()
                       if (rest := self._could_count(seed, todo[size:], steps, decay))}
            size *= 2

    def _could_count(self, seed: str, rest: list[tuple[float, int]], steps: dict[_Key, list[_Step]],
                     decay: float) -> list[tuple[float, int]]:
        """The relations of ``rest`` (not judged yet) that could still weigh as much as the ``limit``-th best
        keyword of ``seed`` known so far (earlier hops' and this hop's judged relations)."""
        if not rest:
            return []
        known = {kid: found[0] for kid, found in self.best.get(seed, {}).items()}
        for (s, _), found in steps.items():
            if s != seed:
                continue
            for other, _, base, rel in found:
                match = self.matches.get(rel[0])
                if match is not None:
                    w = base * context_factor(match, self.context_threshold) * decay
                    if w + _EPS >= self.threshold and w > known.get(other, -1.0):
                        known[other] = w
        if len(known) < self.limit:
            return [t for t in rest if t[1] not in self.matches]
        cut = heapq.nlargest(self.limit, known.values())[-1]
        return [t for t in rest if t[0] + _EPS >= cut and t[1] not in self.matches]


def _strength(found: _Best) -> tuple[float, str]:
    """The order of a user keyword's expansions: weight (desc, at 9 decimals), then keyword."""
    return -round(found[0], 9), found[1]


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
