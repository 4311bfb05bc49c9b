"""How well a relation's stored context fits the user's context (``--context``).

A *context scorer* is any callable ``(user_context, candidates) -> scores``:

- ``candidates`` is a list of dicts, one per relation, with the keys ``id``
  (the relation id), ``keyword`` (the related keyword, the side expanded to),
  ``source`` (the keyword expanded from), ``similarity_type``, ``context``
  (the stored context) and ``score`` -- the candidate shape of
  ``kb_indexer.search.context_match.score_contexts``;
- it returns a score in [0, 1] per candidate (1 = the relation fits the user's
  context, 0 = it does not): either a mapping ``id -> score`` or a sequence in
  candidate order. A candidate missing from a mapping counts as 0.

It is called once per expansion hop with every relation that could still pass
the threshold (for a keyword with more relations than the expansion cap, in a
few rounds, the strongest first, until the rest could not make the cut: see
:func:`kb_indexer.search.expansion.expand`), so a batched LLM scorer plugs in
without changing the pipeline::

    scorer = lambda ctx, cands: score_contexts(conn, ctx, cands, opts=opts)[0]

The default is :func:`lexical_scores`, THE lexical rule (the LLM's fallback
in ``similar --user-context`` and ``query --context`` uses it too): the share
of the user's content words (stopwords removed, light stemming) found in the
relation's stored context or its two keywords, halved for ``contrast``
relations; a user context without content words (only stopwords) carries no
information and scores every relation 1.0.

A relation's expansion weight is multiplied by :func:`context_factor`: a
relation whose score reaches the context threshold (``--context-threshold``,
default 0.7, the design's) fits the user's context and keeps its full weight;
one below it is down-weighted in proportion (to ``CONTEXT_FLOOR`` at a score of
0), not dropped outright; the minimum expansion weight then decides.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD
from kb_indexer.search.terms import is_stopword, split_term

ContextScorer = Callable[[str, list[dict[str, Any]]], "Sequence[float] | Mapping[object, float]"]

CONTEXT_FLOOR = 0.5   # weight multiplier of a relation whose context does not fit at all
CONTRAST_FACTOR = 0.5  # a contrast relation fits a context less than the same words suggest
NO_INFORMATION = 1.0   # the score of every relation when the user context has no content words


# Suffixes a light stemmer strips (longest first), so that inflections and derivations of one word meet:
# games/gaming/game, competitions/competitive/competition, players/playing/played, learner/learning.
_SUFFIXES = ("ations", "ation", "ively", "ions", "ives", "ings", "ers", "ion", "ive", "ing", "ies", "ed", "er",
             "es", "ly", "s")
_MIN_STEM = 3


def _stem(word: str) -> str:
    """A deliberately light stemmer: the longest suffix of :data:`_SUFFIXES` that leaves at least
    ``_MIN_STEM`` letters, then a final ``e`` ("game" and "gaming" both give "gam"). Words of three
    letters or fewer (AI, RL, Go) are kept as they are."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[:-len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if word.endswith("e") and len(word) > _MIN_STEM:
        word = word[:-1]
    return word


def content_stems(text: str) -> set[str]:
    out = set()
    for chunk in (text or "").lower().split():
        for term in split_term(chunk):
            for part in term.replace("’", "'").replace("_", "-").replace(".", "-").replace("/", "-").split("-"):
                part = part.strip("'")
                if part and not is_stopword(part):
                    out.add(_stem(part))
    return out


@lru_cache(maxsize=16)
def _wanted(user_context: str) -> frozenset[str]:
    """The content stems of a user context, computed once per context (not once per relation scored)."""
    return frozenset(content_stems(user_context))


def _matches(term: str, pool: set[str]) -> bool:
    if term in pool:
        return True
    return len(term) >= 4 and any(len(p) >= 4 and (p.startswith(term) or term.startswith(p)) for p in pool)


def context_overlap(user_context: str, candidate: Mapping[str, Any], extra: str = "") -> float | None:
    """Share of the user's context words (stems; prefixes of 4+ letters match) found in a
    relation's stored context and keywords; None when the user context has no content words.

    The one lexical measure behind both ``query --context`` and ``similar --user-context``
    without an LLM.
    """
    wanted = _wanted(user_context)
    if not wanted:
        return None
    pool = content_stems(" ".join(str(candidate.get(k) or "") for k in ("context", "keyword", "source")) + " " + extra)
    return sum(1 for t in wanted if _matches(t, pool)) / len(wanted)


def lexical_score(user_context: str, candidate: Mapping[str, Any]) -> float:
    """The lexical rule for one relation (see the module docstring)."""
    v = context_overlap(user_context, candidate)
    if v is None:
        return NO_INFORMATION
    if candidate.get("similarity_type") == "contrast":
        v *= CONTRAST_FACTOR
    return round(v, 3)


def lexical_scores(user_context: str, candidates: Sequence[Mapping[str, Any]]) -> list[float]:
    """:func:`lexical_score` for each candidate, in candidate order."""
    return [lexical_score(user_context, c) for c in candidates]


def context_factor(match: float, threshold: float = DEFAULT_CONTEXT_THRESHOLD) -> float:
    """Weight multiplier for a context match in [0, 1]: 1 from ``threshold`` up (the relation fits the
    user's context), rising linearly from ``CONTEXT_FLOOR`` at 0 below it."""
    match = min(1.0, max(0.0, float(match)))
    if match >= threshold:
        return 1.0
    return CONTEXT_FLOOR + (1.0 - CONTEXT_FLOOR) * match / threshold


def as_list(scores: "Sequence[float] | Mapping[object, float]", candidates: Sequence[Mapping[str, Any]]) -> list[float]:
    """A scorer's answer as one clamped float per candidate, in candidate order."""
    if isinstance(scores, Mapping):
        values = [scores.get(c["id"], 0.0) for c in candidates]
    else:
        values = list(scores)
        if len(values) != len(candidates):
            raise ValueError(f"context scorer returned {len(values)} scores for {len(candidates)} relations")
    return [min(1.0, max(0.0, float(v or 0.0))) for v in values]
