"""The keyword skill matcher: BM25F over name, description and body, with a minimum score over the background.

Each skill is one document with three fields. A query term's weight in a skill is the BM25F pseudo
frequency ``sum_f W_f * tf_f / (1 - b + b * len_f / avglen_f)``, saturated by ``k1`` and multiplied by
the term's IDF over the skill catalog. The name is boosted (``NAME_WEIGHT``); the body counts less
(``BODY_WEIGHT``). The best ``top`` skills scoring at least ``RELATIVE_CUT`` of the best are candidates;
one is matched when its score *over the message's background* reaches ``MIN_SCORE``.

The background is the raw score of the ``BACKGROUND_RANK``-th best skill sharing any word with the message:
a message made of everyday words ("write a short update for our newsletter", "make my slides less
cluttered") touches many skills a little, and its best skill stands out less from that crowd than one named
by a distinctive word does ("what have I watched on trakt"). ``BACKGROUND_WEIGHT`` of it is taken off every
score before the threshold; a catalog too small to have that many skills sharing a word has no background.
Scores are comparable across catalogs (IDF relative to the rarest possible term), so one threshold serves
10 skills and 1,000.

How much over the background a skill needs depends on the evidence and on the message. ``MIN_SCORE`` when
a shared word is distinctive (at most 2 of 862 skills have it: ``RARE_IDF``), ``COMMON_FACTOR`` times it
when every shared word is common ("write a cron expression" against ``cron-gen``); ``NAMED_CUT`` of it when
the message holds every word of the skill's name ("weather", "open spotify": a one-word name scores little
however exactly it is asked for); ``QUESTION_FACTOR`` times it when the message is a question about the
world sharing a single word with the skill, with no first-person word ("who founded Stripe?", "what does kubernetes mean in greek?"), not a
request for its writer ("what's on my Stripe account?", "add this to Trello"). Two adjacent words written
as one in a skill's name or description count too ("last.fm" for ``lastfm``, "Find My" for
``icloud-findmy``).

Tuned on the development queries of ``bench/skills_eval.py``, its task-like negatives
(``bench/data/skills_tune_negatives.jsonl``) and a tuning set with positives (``bench/data/skills_tune.jsonl``),
never on a held-out message, and measured on two held-out sets never used for tuning
(``bench/data/skills_heldout.jsonl``, ``bench/data/skills_heldout2.jsonl``): ``MIN_SCORE``,
``COMMON_FACTOR``, ``RARE_IDF``, ``NAMED_CUT`` and ``QUESTION_FACTOR`` (chosen for negatives >= 0.9 on the
tuning data), ``BACKGROUND_WEIGHT``, ``NAME_WEIGHT`` and ``BODY_WEIGHT`` earlier. ``RELATIVE_CUT``, ``K1`` and
``B`` are the usual BM25 values and a plain "close to the best" rule. Tokens are whole words
(:mod:`kb_indexer.skills.terms`): "art" never matches "start"; an empty or stopword-only message has no token
and matches nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kb_indexer.skills.terms import VERSION, compounds, spellings, tokens
from kb_indexer.store.connection import file_identity
from kb_indexer.store.dbapi import Connection

NAME_WEIGHT = 3.0
DESCRIPTION_WEIGHT = 1.0
BODY_WEIGHT = 0.3
MIN_SCORE = 1.7
#: The minimum of :func:`relevant_names` (several messages taken together: no background, as before).
TEXT_MIN_SCORE = 1.6
BACKGROUND_RANK = 10
BACKGROUND_WEIGHT = 0.5
RELATIVE_CUT = 0.5
NAMED_CUT = 0.6   # a message naming a skill's whole name needs less of the minimum ("weather", "github")
RARE_IDF = 0.9    # a shared word this rare (IDF, 1 = one skill; 0.9 = 2 skills of 862) is distinctive
COMMON_FACTOR = 1.2    # evidence with no distinctive word needs this much more (1.7 x 1.2 = 2.04)
QUESTION_FACTOR = 2.0  # a question about the world sharing one word ("who founded Stripe?") needs twice as much
K1 = 1.2
B = 0.75
DEFAULT_TOP = 3
DEFAULT_CANDIDATES = 20
FIELDS = ("name", "description", "body")


@dataclass
class SkillIndex:
    names: list[str]
    descriptions: list[str]
    tf: list[dict[str, Counter[str]]]                  # per skill, per field: term counts
    lengths: list[dict[str, int]]
    avg: dict[str, float]
    postings: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def build(cls, rows: list[tuple[str, str, dict[str, list[str]]]]) -> "SkillIndex":
        names, descs, tf, lengths = [], [], [], []
        postings: dict[str, list[int]] = {}
        totals = dict.fromkeys(FIELDS, 0)
        for i, (name, desc, terms) in enumerate(rows):
            names.append(name)
            descs.append(desc)
            counts = {f: Counter(terms.get(f, [])) for f in FIELDS}
            tf.append(counts)
            lengths.append({f: len(terms.get(f, [])) for f in FIELDS})
            for f in FIELDS:
                totals[f] += lengths[-1][f]
            for t in set(counts["name"]) | set(counts["description"]) | set(counts["body"]):
                postings.setdefault(t, []).append(i)
        n = max(len(rows), 1)
        avg = {f: (totals[f] / n) or 1.0 for f in FIELDS}
        return cls(names, descs, tf, lengths, avg, postings)

    def named(self, i: int, asked: set[str]) -> bool:
        """Whether the message holds every word of skill ``i``'s name."""
        name = set(self.tf[i]["name"])
        return bool(name) and name <= asked

    def cut(self, i: int, asked: set[str], why: list[str]) -> float:
        """The share of the minimum score skill ``i`` needs: ``NAMED_CUT`` when the message names it whole,
        ``COMMON_FACTOR`` more when no shared word is distinctive (``RARE_IDF``): "write a cron expression"
        shares only words many skills have; "search my iMessage history" shares one only ``imsg`` has."""
        rare = any(self.idf(w.split(" ")[0]) >= RARE_IDF for w in why)
        return (NAMED_CUT if self.named(i, asked) else 1.0) * (1.0 if rare else COMMON_FACTOR)

    def idf(self, term: str) -> float:
        """IDF relative to the rarest possible term (one skill): scores do not grow with the catalog size,
        so one threshold serves 10 skills and 1,000 (a score of 1 = one unique word, well matched)."""
        n, df = len(self.names), len(self.postings.get(term, ()))
        return math.log(1 + (n - df + 0.5) / (df + 0.5)) / math.log(1 + (n - 0.5) / 1.5)

    def score(self, query_terms: list[str], weights: dict[str, float]) -> dict[int, tuple[float, list[str]]]:
        """Score of every skill sharing enough evidence with the query (:meth:`keep_evident`)."""
        return self.keep_evident(self._raw(query_terms, weights))

    def keep_evident(self, raw: dict[int, tuple[float, list[str]]]) -> dict[int, tuple[float, list[str]]]:
        """The scored skills with evidence enough: one shared word alone is not, unless it is the skill's
        whole name ("love" does not match ``self-love-confidence``; "redis" does match ``redis``)."""
        out = {}
        for i, (s, why) in raw.items():
            if len(why) >= 2 or set(self.tf[i]["name"]) <= {w.split(" ")[0] for w in why}:
                out[i] = (s, why)
        return out

    def _raw(self, query_terms: list[str], weights: dict[str, float]) -> dict[int, tuple[float, list[str]]]:
        out: dict[int, tuple[float, list[str]]] = {}
        for t in dict.fromkeys(query_terms):
            docs = self.postings.get(t)
            if not docs:
                continue
            idf = self.idf(t)
            for i in docs:
                w, where = 0.0, ""
                for f in FIELDS:
                    c = self.tf[i][f].get(t)
                    if c and weights[f] > 0:
                        w += weights[f] * c / (1 - B + B * self.lengths[i][f] / self.avg[f])
                        where = where or f
                if w <= 0:
                    continue
                s, why = out.get(i, (0.0, []))
                out[i] = (s + idf * w * (K1 + 1) / (K1 + w), why + [f"{t} ({where})"])
        return out


_CACHE: dict[str, tuple[str, SkillIndex]] = {}


def _db_file(conn: Connection) -> str:
    """Which index the cache entry is for ("" for an in-memory one: not cached)."""
    identity = file_identity(conn)
    return str(identity[:2]) if identity else ""


def load_index(conn: Connection, version: str) -> SkillIndex:
    """The matcher's index of the skill table, rebuilt when the skill set's version changes."""
    key = _db_file(conn)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == version and key:
        return hit[1]
    rows = []
    for name, desc, body, raw in conn.execute("SELECT name, description, body, terms FROM skills ORDER BY name"):
        try:
            terms = json.loads(raw)
        except (TypeError, ValueError):
            terms = {}
        if terms.get("v") != VERSION:  # written by another tokenizer version
            terms = {"name": tokens(name), "description": tokens(desc), "body": tokens(body)}
        rows.append((name, desc, terms))
    index = SkillIndex.build(rows)
    _CACHE[key] = (version, index)
    return index


@dataclass
class MatchOptions:
    top: int = DEFAULT_TOP
    min_score: float = MIN_SCORE
    candidates: int = DEFAULT_CANDIDATES
    name_weight: float | None = None   # None: the module's NAME_WEIGHT / BODY_WEIGHT
    body_weight: float | None = None

    def weights(self) -> dict[str, float]:
        return {"name": NAME_WEIGHT if self.name_weight is None else self.name_weight,
                "description": DESCRIPTION_WEIGHT,
                "body": BODY_WEIGHT if self.body_weight is None else self.body_weight}


def background(raw: dict[int, tuple[float, list[str]]]) -> float:
    """The raw score of the ``BACKGROUND_RANK``-th best skill sharing a word with the message (0 when fewer)."""
    if len(raw) < BACKGROUND_RANK:
        return 0.0
    return sorted((s for s, _ in raw.values()), reverse=True)[BACKGROUND_RANK - 1]


def keyword_match(index: SkillIndex, message: str, opts: MatchOptions | None = None) -> dict[str, Any]:
    """The keyword matcher's result: matched skills (may be empty) and the ranked candidates."""
    opts = opts or MatchOptions()
    terms = query_terms(index, message)
    raw = index._raw(terms, opts.weights())
    scored = index.keep_evident(raw)
    floor = BACKGROUND_WEIGHT * background(raw)
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], index.names[kv[0]]))
    best = ranked[0][1][0] if ranked else 0.0
    world = impersonal_question(message)
    matched: list[dict[str, Any]] = []
    asked = set(terms)
    spelled = spellings(message)
    for i, (s, why) in ranked:
        if len(matched) >= opts.top or s < RELATIVE_CUT * best:
            break
        factor = QUESTION_FACTOR if world and len(why) < 2 else 1.0   # one shared word in a world question
        if s - floor < opts.min_score * factor * index.cut(i, asked, why):
            continue
        matched.append({"name": index.names[i], "description": index.descriptions[i], "score": round(s, 4),
                        "source": "keyword", "reason": "shared words: " + ", ".join(_as_written(w, spelled) for w in why)})
    candidates = [{"name": index.names[i], "description": index.descriptions[i], "score": round(s, 4)}
                  for i, (s, _) in ranked[:opts.candidates]]
    return {"query": message, "terms": terms, "matched": matched, "method": "keyword", "candidates": candidates,
            "min_score": opts.min_score, "background": round(floor, 4), "top": opts.top,
            "skills": len(index.names)}


def _as_written(why: str, spelled: dict[str, str]) -> str:
    """``"retri (body)"`` as the message wrote the word: ``"retry (body)"``."""
    term, _, where = why.partition(" ")
    return f"{spelled.get(term, term)} {where}"


def query_terms(index: SkillIndex, message: str) -> list[str]:
    """The message's tokens plus its two-word compounds that some skill has ("last.fm" for ``lastfm``)."""
    out = tokens(message)
    out += [c for c in dict.fromkeys(compounds(message)) if c in index.postings and c not in out]
    return out


def impersonal_question(message: str) -> bool:
    """Whether ``message`` asks about the world rather than for something done for its writer: a question
    (a leading question word or a final "?") with no first-person word. "who founded Stripe?" is one;
    "what's on my Stripe account?", "can you show the Stripe payouts?" and "add this to Trello" are not."""
    words = _WORDS.findall(message.lower().replace("\u2019", "'"))
    if not words or not _FIRST_PERSON.isdisjoint(words) or not _POLITE.isdisjoint(words):
        return False
    if words[0] in _ASK and words[1:2] in (["you"], ["u"]):  # "can you ...?" asks for something done
        return False
    return words[0] in _QUESTION_WORDS or message.rstrip().endswith(("?", "\uff1f"))


_WORDS = re.compile(r"[\w']+")
_FIRST_PERSON = frozenset("""
i me my mine myself we us our ours ourselves i'm im i've ive i'd i'll we're we've let's lets
mi mis yo nuestro nuestra nuestros je moi mon ma mes nous notre nos
""".split())  # the Spanish and French ones too (messages in those languages are common)
_POLITE = frozenset("please pls plz".split())
_ASK = frozenset("can could would will".split())
_QUESTION_WORDS = frozenset("""
what what's whats who who's whos whom whose why how how's when where which is are was were do does did
can could should would will
""".split())


def candidate_pool(index: SkillIndex, message: str, k: int = DEFAULT_CANDIDATES,
                   opts: MatchOptions | None = None) -> list[dict[str, Any]]:
    """The LLM matcher's pre-filter: the ``k`` skills with the best raw keyword score.

    Wider than :func:`keyword_match`: no minimum score, no relative cut and no "one shared word is not
    enough" rule, so a paraphrase that shares only one weak word with a skill still reaches the LLM. A
    message sharing no word with any skill has no candidate.
    """
    opts = opts or MatchOptions()
    raw = index._raw(query_terms(index, message), opts.weights())
    ranked = sorted(raw.items(), key=lambda kv: (-kv[1][0], index.names[kv[0]]))[:k]
    return [{"name": index.names[i], "description": index.descriptions[i], "score": round(s, 4)}
            for i, (s, _) in ranked]


def relevant_names(index: SkillIndex, text: str, min_score: float = TEXT_MIN_SCORE) -> set[str]:
    """The skills the keyword matcher finds in ``text`` (every one reaching ``min_score``, no top and no
    relative cut: ``text`` is several messages taken together, each may be about another skill)."""
    scored = index.score(tokens(text), MatchOptions().weights())
    return {index.names[i] for i, (s, _) in scored.items() if s >= min_score}
