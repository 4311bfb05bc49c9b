"""`kbindex learned suggestions`: typed relations the query log suggests, for a person to accept or dismiss (as
search services suggest synonyms from their analytics). Nothing is written until a person accepts one; no LLM.

Two kinds of evidence, both from questions that found a document marked helpful:

* **refine chains**: an attempt of a recorded query found none of the query's helpful documents, and the next
  attempt (``refine``) found one. The terms it replaced (or added) suggest a relation between the old and the new
  term: ``fts`` refined into ``full text search``.
* **co-helpful questions**: two recorded questions whose helpful marks name the same document, each with at most
  :data:`MAX_DISTINCT` terms the other lacks: a distinctive term of one that the document has (a tag, or words of
  its text) and one of the other that it lacks are related concepts (the other question's words for it).

The type (:func:`relation_type`): ``abbreviation`` when one term is the initials of the other, else ``synonym``
for a term replaced by another, else ``related_concept``. A pair is suggested when at least :data:`MIN_QUERIES`
queries support it (as for `learn`'s cross-query items) and the learning policy finds its helpful marks' askers
enough, as it does for what ``learn`` learns (:func:`kb_indexer.learn.policy.supported`: ``min_askers`` distinct
askers, no one above ``max_share``; on PostgreSQL a curator's or the owner's marks are enough:
:func:`kb_indexer.store.team.trusted`). Never suggested: a pair already related (any type), one a person deleted
(:func:`kb_indexer.store.provenance.is_tombstoned`), one whose learned relation was rejected or removed, and one
dismissed (table ``suggestion_dismissals``). A suggestion's ``key`` is derived from its two terms only: the same
on every run and every engine.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Iterable, Mapping, NamedTuple

from kb_indexer.learn import policy as learning_policy
from kb_indexer.learn.learner import MIN_QUERIES
from kb_indexer.learn.wording import MAX_QUESTIONS
from kb_indexer.search.terms import content_terms, parse_text
from kb_indexer.store.connection import transaction
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.documents import KeywordIds, get_body
from kb_indexer.store.provenance import is_tombstoned, lift
from kb_indexer.store.similarities import upsert_similarity
from kb_indexer.store.team import principal, trusted
from kb_indexer.text import normalize_keyword

MAX_DISTINCT = 2    # co-helpful questions: at most this many terms of each that the other lacks
MAX_QUESTIONS_PER_DOCUMENT = 200   # co-helpful questions compared per document (the latest marked)
#: The score an accepted suggestion's relation gets, by type.
SCORES = {"abbreviation": 0.9, "synonym": 0.8, "related_concept": 0.6}
_RANK = {"abbreviation": 0, "synonym": 1, "related_concept": 2}


@dataclass
class _Evidence:
    query_ids: set[int] = field(default_factory=set)
    marks: dict[int, str] = field(default_factory=dict)   # the helpful marks behind it: feedback id -> asker
    refined: set[int] = field(default_factory=set)      # queries with a refine chain behind the pair
    replaced: bool = False                              # one term replaced the other (else: added beside it)
    change: tuple[str, str] = ("", "")                  # (old, new) of the first refine chain seen
    co_helpful: set[int] = field(default_factory=set)   # queries of co-helpful questions behind the pair


@dataclass
class _Attempt:
    id: int
    terms: list[str]
    found: set[str]


def suggestion_key(term1: str, term2: str) -> str:
    """The stable key of a suggested pair (either order)."""
    a, b = sorted((normalize_keyword(term1), normalize_keyword(term2)))
    return hashlib.sha1(f"{a}\x1f{b}".encode("utf-8")).hexdigest()[:10]


def _fold(term: str) -> tuple[str, ...]:
    """A term's words, plurals folded (``agents``: ``agent``), to tell two spellings of one term apart."""
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in term.split())


def is_initials(short: str, long: str) -> bool:
    """Whether the one-word ``short`` spells the initials of the words of ``long`` (``fts``, ``full text
    search``; a plural ``s`` of the short form and hyphenated words are read as such)."""
    words = [p for w in long.split() for p in w.split("-") if p]
    letters = short[:-1] if short.endswith("s") and len(short) == len(words) + 1 else short
    return " " not in short and len(words) >= 2 and letters == "".join(w[0] for w in words)


def relation_type(term1: str, term2: str, replaced: bool) -> str:
    """The one rule for a suggestion's type."""
    if is_initials(term1, term2) or is_initials(term2, term1):
        return "abbreviation"
    return "synonym" if replaced else "related_concept"


def _comparable(a: str, b: str) -> bool:
    """Two terms a relation could join: not one term twice, and neither's words inside the other's."""
    fa, fb = set(_fold(a)), set(_fold(b))
    return bool(fa) and bool(fb) and not fa <= fb and not fb <= fa


def _load(text: Any, default: Any) -> Any:
    try:
        value = json.loads(text) if text else default
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def attempt_terms(question: str, keywords: Any, options: Any) -> list[str]:
    """An attempt's terms: its keywords when given with ``--keywords``; else the known keywords found in the
    question, its quoted phrases and its other content words."""
    kws = [normalize_keyword(k) for k in _load(keywords, []) if isinstance(k, str) and normalize_keyword(k)]
    if _load(options, {}).get("keywords_from") == "given":
        return list(dict.fromkeys(kws))
    parsed = parse_text(question)
    kws += [p for p in parsed.phrases if p]
    inside = {w for k in kws for w in k.split()}
    words = [w for w in content_terms(parsed.words) if w not in inside]
    return list(dict.fromkeys(kws + words))


class _Mark(NamedTuple):
    id: int
    filepath: str
    asker: str
    attempt_id: int | None


def _helpful_marks(conn: Connection) -> dict[int, list[_Mark]]:
    """query id -> its helpful marks that learning counts, oldest first."""
    out: dict[int, list[_Mark]] = defaultdict(list)
    for r in conn.execute("SELECT id, query_id, filepath, asker, attempt_id FROM query_feedback "
                          "WHERE helpful = 1 AND excluded = 0 ORDER BY id"):
        out[int(r[1])].append(_Mark(int(r[0]), r[2], r[3] or "unknown", r[4]))
    return out


def _attempts(conn: Connection) -> tuple[dict[int, list[_Attempt]], dict[int, str]]:
    """The attempts of every query with a helpful mark (in order), and each such query's question."""
    attempts: dict[int, list[_Attempt]] = defaultdict(list)
    questions: dict[int, str] = {}
    for r in conn.execute(
            "SELECT a.id, a.query_id, a.keywords, a.top_results, a.options, q.question FROM query_attempts a "
            "JOIN queries q ON q.id = a.query_id WHERE a.query_id IN (SELECT query_id FROM query_feedback "
            "WHERE helpful = 1 AND excluded = 0) ORDER BY a.query_id, a.id"):
        found = {t["filepath"] for t in _load(r[3], []) if isinstance(t, dict) and isinstance(t.get("filepath"), str)}
        attempts[int(r[1])].append(_Attempt(int(r[0]), attempt_terms(r[5], r[2], r[4]), found))
        questions[int(r[1])] = r[5]
    return attempts, questions


def replacements(before: list[str], after: list[str]) -> list[tuple[str, str, bool]]:
    """What an attempt's terms ``after`` the one ``before`` suggest: (old term, new term, replaced). A removed
    term and an added one that are its initials pair up; one term left removed and one added: a replacement;
    terms only added: each beside each term kept (at most :data:`MAX_DISTINCT` of either)."""
    removed = [t for t in before if t not in after]
    added = [t for t in after if t not in before]
    pairs: list[tuple[str, str, bool]] = []
    for r in list(removed):
        a = next((a for a in added if is_initials(r, a) or is_initials(a, r)), None)
        if a is not None:
            pairs.append((r, a, True))
            removed.remove(r)
            added.remove(a)
    if len(removed) == 1 and len(added) == 1:
        pairs.append((removed[0], added[0], True))
    elif not removed and not pairs and 0 < len(added) <= MAX_DISTINCT:
        kept = [t for t in before if t in after]
        if len(kept) <= MAX_DISTINCT:
            pairs += [(k, a, False) for k in kept for a in added]
    return [p for p in pairs if _comparable(p[0], p[1])]


def _add(evidence: dict[tuple[str, str], _Evidence], a: str, b: str, query_ids: Iterable[int],
         marks: Iterable[_Mark]) -> _Evidence:
    ev = evidence[(a, b) if a < b else (b, a)]
    ev.query_ids.update(query_ids)
    ev.marks.update((m.id, m.asker) for m in marks)
    return ev


def _refine_chains(marks: dict[int, list[_Mark]], attempts: dict[int, list[_Attempt]],
                   evidence: dict[tuple[str, str], _Evidence]) -> None:
    for qid, atts in attempts.items():
        helpful = {m.filepath for m in marks[qid]}
        for prev, nxt in zip(atts, atts[1:]):
            if prev.found & helpful or not nxt.found & helpful:
                continue
            found = [m for m in marks[qid] if m.filepath in nxt.found]
            for old, new, replaced in replacements(prev.terms, nxt.terms):
                ev = _add(evidence, old, new, [qid], found)
                ev.refined.add(qid)
                ev.change = ev.change if ev.change[0] else (old, new)
                ev.replaced = ev.replaced or replaced


def _question_terms(qid: int, attempt_id: int | None, attempts: dict[int, list[_Attempt]]) -> list[str]:
    """The terms of the attempt a mark names (else the query's latest)."""
    atts = attempts.get(qid) or []
    named = [a for a in atts if a.id == attempt_id]
    return (named or atts[-1:] or [_Attempt(0, [], set())])[0].terms


class _Document:
    """Whether a document has a term: as a tag, or all its words in the text (read on first use)."""

    def __init__(self, conn: Connection, filepath: str) -> None:
        self.conn, self.filepath = conn, filepath
        self._read: tuple[set[str], set[str]] | None = None

    def has(self, term: str) -> bool:
        if self._read is None:
            row = self.conn.execute("SELECT id FROM documents WHERE filepath = ?", (self.filepath,)).fetchone()
            tags = {r[0] for r in self.conn.execute(
                "SELECT k.keyword FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
                "WHERE dk.document_id = ?", (row[0],))} if row else set()
            text = get_body(self.conn, row[0]).lower() if row else ""
            self._read = tags, {w for t in re.findall(r"\w+", text) for w in _fold(t)}
        tags, words = self._read
        return term in tags or set(_fold(term)) <= words


def _co_helpful(conn: Connection, marks: dict[int, list[_Mark]], attempts: dict[int, list[_Attempt]],
                evidence: dict[tuple[str, str], _Evidence]) -> None:
    by_doc: dict[str, dict[int, tuple[list[str], list[_Mark]]]] = defaultdict(dict)
    for qid, ms in marks.items():
        for m in ms:
            by_doc[m.filepath].setdefault(qid, (_question_terms(qid, m.attempt_id, attempts), []))[1].append(m)
    for filepath, questions in by_doc.items():
        doc = _Document(conn, filepath)
        latest = sorted(questions)[-MAX_QUESTIONS_PER_DOCUMENT:]
        for q1, q2 in combinations(latest, 2):
            (t1, a1), (t2, a2) = questions[q1], questions[q2]
            f1, f2 = {_fold(t) for t in t1}, {_fold(t) for t in t2}
            d1, d2 = [t for t in t1 if _fold(t) not in f2], [t for t in t2 if _fold(t) not in f1]
            if not d1 or not d2 or len(d1) > MAX_DISTINCT or len(d2) > MAX_DISTINCT:
                continue
            for a in d1:
                for b in d2:
                    if _comparable(a, b) and doc.has(a) != doc.has(b):
                        _add(evidence, a, b, [q1, q2], a1 + a2).co_helpful.update((q1, q2))


def _excluded(conn: Connection, ids: KeywordIds, a: str, b: str, dismissed: set[str]) -> bool:
    """Whether the pair is not to be suggested: dismissed, already related, deleted by a person, or a learned
    relation of it was rejected or removed."""
    if suggestion_key(a, b) in dismissed:
        return True
    if conn.execute("SELECT 1 FROM learned_items WHERE kind = 'similarity' AND status IN ('rejected', 'removed') "
                    "AND key IN (?, ?)", (f"similarity:{a}|{b}", f"similarity:{b}|{a}")).fetchone():
        return True
    k1, k2 = ids.get(a), ids.get(b)
    if k1 is None or k2 is None:
        return False
    lo, hi = min(k1, k2), max(k1, k2)
    related = conn.execute("SELECT 1 FROM keyword_similarities WHERE keyword_id_1 = ? AND keyword_id_2 = ?",
                           (lo, hi)).fetchone()
    return related is not None or is_tombstoned(conn, lo, hi, None)


def _reason(a: str, b: str, sim_type: str, ev: _Evidence) -> str:
    parts = []
    if ev.refined:
        n = len(ev.refined)
        old, new = ev.change
        change = f"replaced '{old}' with '{new}'" if ev.replaced else f"added '{new}' to '{old}'"
        parts.append(f"in {n} quer{'y' if n == 1 else 'ies'} a refine {change} and found a helpful document")
    if ev.co_helpful:
        parts.append(f"{len(ev.co_helpful)} questions, with '{a}' or with '{b}', found the same helpful document")
    if sim_type == "abbreviation":
        short, long = (a, b) if is_initials(a, b) else (b, a)
        parts.append(f"'{short}' is the initials of '{long}'")
    return "; ".join(parts)


def _suggestion(conn: Connection, ids: KeywordIds, a: str, b: str, ev: _Evidence,
                questions: dict[int, str]) -> dict[str, Any]:
    sim_type = relation_type(a, b, ev.replaced)
    if sim_type == "abbreviation" and is_initials(b, a):
        a, b = b, a          # the short form first
    shown = [ids.display(k) if (k := ids.get(t)) is not None else t for t in (a, b)]
    qids = sorted(ev.query_ids)
    return {"key": suggestion_key(a, b), "keyword1": shown[0], "keyword2": shown[1], "type": sim_type,
            "score": SCORES[sim_type], "queries": len(qids), "query_ids": qids,
            "questions": [questions[q] for q in qids if questions.get(q)][:MAX_QUESTIONS],
            "askers": sorted(set(ev.marks.values())),
            "sources": [s for s, on in (("refine", ev.refined), ("co_helpful", ev.co_helpful)) if on],
            "reason": _reason(a, b, sim_type, ev)}


def _supported(conn: Connection, ev: _Evidence, policy: Mapping[str, Any], sure: set[str]) -> bool:
    """Enough queries, and askers the learning policy finds enough (or a trusted one), as for `learn`."""
    if len(ev.query_ids) < MIN_QUERIES:
        return False
    counts = Counter(principal(conn, a) for a in ev.marks.values())
    return learning_policy.supported(counts, policy) or any(a in counts for a in sure)


def current(conn: Connection) -> list[dict[str, Any]]:
    """Every suggestion the query log supports now, the best supported first."""
    marks = _helpful_marks(conn)
    attempts, questions = _attempts(conn)
    evidence: dict[tuple[str, str], _Evidence] = defaultdict(_Evidence)
    _refine_chains(marks, attempts, evidence)
    _co_helpful(conn, marks, attempts, evidence)
    policy = learning_policy.read(conn)
    sure = trusted(conn, {principal(conn, m.asker) for ms in marks.values() for m in ms})
    dismissed = {r[0] for r in conn.execute("SELECT key FROM suggestion_dismissals")}
    ids = KeywordIds(conn)
    out = [_suggestion(conn, ids, a, b, ev, questions) for (a, b), ev in sorted(evidence.items())
           if _supported(conn, ev, policy, sure) and not _excluded(conn, ids, a, b, dismissed)]
    out.sort(key=lambda s: (-s["queries"], _RANK[s["type"]], s["keyword1"].lower(), s["keyword2"].lower()))
    return out


def suggestions(conn: Connection, limit: int = 0) -> dict[str, Any]:
    """The suggestions (the ``limit`` best supported; 0: all), with their total and the support they need."""
    found = current(conn)
    shown = found[:limit] if limit else found
    return {"suggestions": shown, "count": len(shown), "total": len(found), "min_queries": MIN_QUERIES,
            "min_askers": int(learning_policy.read(conn)["min_askers"])}


def _chosen(conn: Connection, keys: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """The current suggestions of these keys (each once, in the order given), and the keys of none."""
    by_key = {s["key"]: s for s in current(conn)}
    wanted = list(dict.fromkeys(k.strip().lower() for k in keys))
    return [by_key[k] for k in wanted if k in by_key], [k for k in wanted if k not in by_key]


def accept(conn: Connection, keys: list[str]) -> dict[str, Any]:
    """Write each suggestion as a person's typed relation (as ``relate`` does: its author is the connection's
    asker), in one transaction."""
    with transaction(conn):
        chosen, missing = _chosen(conn, keys)
        ids = KeywordIds(conn)
        accepted = []
        for s in chosen:
            context = f"Suggested by the query log: {s['reason']}"
            sid, _ = upsert_similarity(conn, ids, s["keyword1"], s["keyword2"], s["type"], context, s["score"],
                                       False, "person")
            k1, k2 = ids.get(s["keyword1"]), ids.get(s["keyword2"])
            assert k1 is not None and k2 is not None   # upsert_similarity made them
            lift(conn, k1, k2, s["type"])
            accepted.append({"key": s["key"], "id": sid, "keyword1": s["keyword1"], "keyword2": s["keyword2"],
                             "type": s["type"], "score": s["score"], "context": context})
    return {"accepted": accepted, "count": len(accepted), "not_suggested": missing}


def dismiss(conn: Connection, keys: list[str]) -> dict[str, Any]:
    """Record the suggestions as dismissed (by the connection's asker): they are not suggested again."""
    with transaction(conn):
        chosen, missing = _chosen(conn, keys)
        conn.executemany("INSERT INTO suggestion_dismissals (key, keyword1, keyword2, similarity_type, dismissed_by) "
                         "VALUES (?, ?, ?, ?, kb_asker()) ON CONFLICT (key) DO NOTHING",
                         [(s["key"], s["keyword1"], s["keyword2"], s["type"]) for s in chosen])
    return {"dismissed": [s["key"] for s in chosen], "count": len(chosen), "not_suggested": missing}
