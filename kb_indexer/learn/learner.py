"""`kbindex learn`: turn feedback (human-validated ground truth) into index improvements.

Every learned item is derived from *all* feedback so far, keyed deterministically, so running
``learn`` twice changes nothing the second time. Analyses:

* association  -- one helpful (or not-helpful) mark links the question's terms to the document,
  weighted by evidence: asking the same (or a near-identical) question again ranks it higher
  (or lower), and a helpful mark lifts it, less, for similar questions too. Applied at query time by
  :func:`kb_indexer.learn.boosts.association_boosts`.
* keyword      -- keyword augmentation: a user keyword that found a helpful document in >= 2
  independent queries becomes a learned tag of that document.
* similarity   -- keyword gap: a user keyword absent from the helpful documents is related to the
  one document keyword best associated with it (>= 2 queries); co-occurrence: two user keywords
  used together in >= 2 successful queries.
* score        -- expansions that led to helpful documents gain score, ones that led to
  not-helpful documents lose it (bounded, reversible).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

from kb_indexer.learn.policy import supported
from kb_indexer.learn.smart import smart_tags
from kb_indexer.search.terms import question_terms as question_terms  # one rule, shared with search rules
from kb_indexer.store.team import principal, shared, trusted
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection, Row

MIN_QUERIES = 2          # cross-query patterns need this many independent queries
SCORE_STEP = 0.05        # similarity score change per net helpful/not-helpful expansion
SCORE_CAP = 0.25         # largest total change of a similarity score
ASSOC_MIN_OVERLAP = 0.5  # Jaccard overlap of question terms for an association to fire


@dataclass
class Event:
    feedback_id: int
    query_id: int
    question: str
    helpful: bool
    doc_id: int
    filepath: str
    explicit: list[str]
    expansions: list[dict[str, Any]] = field(default_factory=list)  # relations that led to this document
    asker: str = "unknown"   # who marked it (kb_indexer.store.team)
    returned: bool = True    # whether the attempt marked returned the document (False: found elsewhere)


def _attempt_info(row: Row | None, filepath: str) -> tuple[list[str], list[dict[str, Any]], bool]:
    """(explicit user keywords, expansions that led to ``filepath``, whether it returned ``filepath``) of a
    recorded attempt (None: the mark names a document none of the question's attempts returned).

    Keywords count as the user's only when given with --keywords (``options.keywords_from``);
    keywords found in the question are covered by the question-term association instead.
    """
    if row is None:
        return [], [], False
    try:
        keywords = json.loads(row["keywords"] or "[]")
        expansions = json.loads(row["expansions"] or "[]")
        top = json.loads(row["top_results"] or "[]")
        options = json.loads(row["options"] or "{}")
    except json.JSONDecodeError:
        return [], [], True
    explicit: list[str] = []
    if isinstance(options, dict) and options.get("keywords_from") == "given" and isinstance(keywords, list):
        explicit = [normalize_keyword(k) for k in keywords if isinstance(k, str)]
    matched: set[str] = set()
    returned = False
    for r in top if isinstance(top, list) else []:
        if isinstance(r, dict) and r.get("filepath") == filepath:
            returned = True
            matched = {normalize_keyword(k) for k in r.get("matched_keywords", []) if isinstance(k, str)}
    led: list[dict[str, Any]] = []
    for e in expansions if isinstance(expansions, list) else []:
        if isinstance(e, dict) and e.get("relation_id") and normalize_keyword(str(e.get("keyword", ""))) in matched:
            for rid in (e.get("path") or [e["relation_id"]]):
                led.append({"relation_id": rid, "original": e.get("user_keyword"), "expanded": e.get("keyword")})
    return explicit, led, returned


def load_events(conn: Connection) -> list[Event]:
    """Every feedback mark on an indexed document (not excluded; each asker's mark is one event of its own), with
    its question and its attempt, in one statement (on
    PostgreSQL a statement per mark was a round trip each: thousands for a team's day of feedback)."""
    rows = conn.execute(
        "SELECT f.id, f.query_id, f.attempt_id, f.filepath, f.helpful, f.asker, q.question, d.id AS doc_id, "
        "a.keywords, a.expansions, a.top_results, a.options "
        "FROM query_feedback f JOIN queries q ON q.id = f.query_id "
        "JOIN documents d ON d.filepath = f.filepath LEFT JOIN query_attempts a ON a.id = f.attempt_id "
        "WHERE f.excluded = 0 ORDER BY f.id").fetchall()
    events = []
    for r in rows:
        explicit, led, returned = _attempt_info(r if r["attempt_id"] is not None else None, r["filepath"])
        events.append(Event(r["id"], r["query_id"], r["question"], bool(r["helpful"]), r["doc_id"], r["filepath"],
                            explicit, led, r["asker"] or "unknown", returned))
    return events


def _evidence_weight(helpful: int, not_helpful: int) -> float:
    """+0.5 for one helpful mark, towards +1 with more; negative for not-helpful marks."""
    return round((helpful - not_helpful) / (helpful + not_helpful + 1), 4)


def analyse(conn: Connection, events: list[Event], min_queries: int = MIN_QUERIES,
            learning_policy: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The learned items all feedback justifies, each with reason, evidence and provenance. With a
    ``learning_policy``, an item its askers do not support enough (:func:`kb_indexer.learn.policy.supported`)
    asks for nothing: it is not created, and one learned before is withdrawn."""
    doc_kw = _document_tags(conn)
    items = _associations(events)
    items += _keyword_tags(events, doc_kw, min_queries)
    items += _keyword_gaps(events, doc_kw, min_queries)
    items += _co_occurrences(events, {it["key"] for it in items}, min_queries)
    items += smart_tags(conn, events, doc_kw, min_queries, {it["key"] for it in items})
    items += _score_changes(events)
    if learning_policy is not None:
        askers = {e.feedback_id: principal(conn, e.asker) for e in events}
        vouched = trusted(conn, set(askers.values()))
        below_policy(items, askers, learning_policy, vouched)
        if shared(conn):
            found_elsewhere(items, askers, {e.feedback_id for e in events if not e.returned}, vouched)
    marks = {e.feedback_id for e in events} | _excluded(conn)
    items.extend(_withdrawals(conn, {it["key"] for it in items}, marks))
    return items


def below_policy(items: list[dict[str, Any]], askers: Mapping[int, str], learning_policy: Mapping[str, Any],
                 trusted_askers: Collection[str] = ()) -> int:
    """Turn the items whose evidence the policy finds too narrow (too few distinct askers, or one asker's share
    too large) into items that ask for nothing, their reason saying why; how many. An item that one of the
    ``trusted_askers`` marked is supported (:func:`kb_indexer.store.team.trusted`)."""
    n = 0
    for item in items:
        if inactive(item):
            continue
        counts = Counter(askers.get(f, "unknown") for f in item["feedback_ids"])
        if supported(counts, learning_policy) or any(a in counts for a in trusted_askers):
            continue
        top = max(counts.values(), default=0) / max(sum(counts.values()), 1)
        why = (f"{len(counts)} distinct asker{'s' if len(counts) != 1 else ''}, the policy needs "
               f"{learning_policy['min_askers']}" if len(counts) < int(learning_policy["min_askers"]) else
               f"one asker gives {top:.0%} of the evidence, the policy allows {float(learning_policy['max_share']):.0%}")
        _zero(item)
        item["reason"] = f"not supported by the learning policy ({why}): {item['reason']}"
        item["below_policy"] = True
        n += 1
    return n


def found_elsewhere(items: list[dict[str, Any]], askers: Mapping[int, str], unreturned: set[int],
                    trusted_askers: Collection[str]) -> int:
    """Flag for review (``needs_review``, even under ``auto``) the items whose every mark names a document the
    question never returned, marked by a single asker none of whom is trusted: such a mark is how one member
    pulls an unrelated note into everyone's results. How many."""
    n = 0
    for item in items:
        ids = item["feedback_ids"]
        if inactive(item) or not ids or not all(f in unreturned for f in ids):
            continue
        who = {askers.get(f, "unknown") for f in ids}
        if len(who) < 2 and not any(a in who for a in trusted_askers):
            item["needs_review"] = True
            item["reason"] += " (marked on a document the question did not return: held for review)"
            n += 1
    return n


def _excluded(conn: Connection) -> set[int]:
    """The excluded marks (``learned remove --asker``): an item that rests on them is re-judged (withdrawn)."""
    return {int(r[0]) for r in conn.execute("SELECT id FROM query_feedback WHERE excluded = 1")}


def _document_tags(conn: Connection) -> dict[int, set[str]]:
    """The documents' own tags (what learning must not duplicate or reason from circularly)."""
    doc_kw: dict[int, set[str]] = defaultdict(set)
    for doc_id, kw in conn.execute("SELECT dk.document_id, k.keyword FROM document_keywords dk "
                                   "JOIN keywords k ON k.id = dk.keyword_id WHERE dk.source != 'learned'"):
        doc_kw[doc_id].add(kw)
    return doc_kw


def _associations(events: list[Event]) -> list[dict[str, Any]]:
    """Question terms -> document, weighted by helpful and not-helpful marks."""
    assoc: dict[tuple[str, int], dict[str, Any]] = {}
    for e in events:
        terms = question_terms(e.question)
        if not terms:
            continue
        a = assoc.setdefault((" ".join(terms), e.doc_id), {"terms": terms, "filepath": e.filepath, "h": set(),
                                                            "n": set(), "fb": []})
        (a["h"] if e.helpful else a["n"]).add(e.query_id)
        a["fb"].append(e.feedback_id)
    items = []
    for (sig, doc_id), a in sorted(assoc.items()):
        w = _evidence_weight(len(a["h"]), len(a["n"]))  # 0 when marks cancel out: the item then stops firing
        verdict = "helpful" if w > 0 else "not helpful" if w < 0 else "mixed marks"
        items.append({"kind": "association", "key": f"association:{doc_id}:{sig}", "document_id": doc_id,
                      "filepath": a["filepath"], "terms": a["terms"], "weight": w,
                      "helpful": len(a["h"]), "not_helpful": len(a["n"]), "feedback_ids": sorted(a["fb"]),
                      "reason": f"{verdict} for a question with terms {', '.join(a['terms'][:8])}"})
    return items


def _keyword_tags(events: list[Event], doc_kw: dict[int, set[str]], min_queries: int) -> list[dict[str, Any]]:
    """User keyword -> helpful document, in >= min_queries queries net of queries that marked the
    document not helpful with that keyword."""
    aug: dict[tuple[str, int], dict[str, Any]] = {}
    for e in events:
        for k in e.explicit:
            if k and k not in doc_kw[e.doc_id]:
                a = aug.setdefault((k, e.doc_id), {"h": set(), "n": set(), "fb": [], "filepath": e.filepath})
                (a["h"] if e.helpful else a["n"]).add(e.query_id)
                a["fb"].append(e.feedback_id)
    items = []
    for (k, doc_id), a in sorted(aug.items()):
        net = len(a["h"]) - len(a["n"])
        weight = round(min(1.0, 0.5 + 0.15 * net), 4) if net >= min_queries else 0.0
        items.append({"kind": "keyword", "key": f"keyword:{doc_id}:{k}", "document_id": doc_id,
                      "filepath": a["filepath"], "keyword": k, "evidence": len(a["h"]), "against": len(a["n"]),
                      "weight": weight, "feedback_ids": sorted(a["fb"]),
                      "reason": f"{len(a['h'])} queries used '{k}' to find this helpful document"
                                + (f", {len(a['n'])} marked it not helpful" if a["n"] else "")})
    return items


_Gaps = dict[str, dict[str, set[int]]]            # user keyword -> document keyword -> query ids
_PairIds = dict[tuple[str, str], set[int]]         # (user keyword, document keyword) -> query ids
_PairFeedback = dict[tuple[str, str], list[int]]   # (user keyword, document keyword) -> feedback ids


def _gap_evidence(events: list[Event], doc_kw: dict[int, set[str]]) -> tuple[_Gaps, _PairIds, _PairFeedback]:
    """Per user keyword k absent from a helpful document: the queries linking it to each of that
    document's keywords m (for), the not-helpful ones (against), and the feedback rows of both."""
    gap: _Gaps = defaultdict(lambda: defaultdict(set))
    gap_neg: _PairIds = defaultdict(set)
    gap_fb: _PairFeedback = defaultdict(list)
    for e in events:
        if not e.helpful:
            continue
        for k in e.explicit:
            if k and k not in doc_kw[e.doc_id]:
                for m in doc_kw[e.doc_id] - {k}:
                    gap[k][m].add(e.query_id)
                    gap_fb[(k, m)].append(e.feedback_id)
    for e in events:  # a not-helpful document tagged m counts against k -> m
        if e.helpful:
            continue
        for k in e.explicit:
            for m in doc_kw[e.doc_id]:
                if k in gap and m in gap[k]:
                    gap_neg[(k, m)].add(e.query_id)
                    gap_fb[(k, m)].append(e.feedback_id)
    return gap, gap_neg, gap_fb


def _keyword_gaps(events: list[Event], doc_kw: dict[int, set[str]], min_queries: int) -> list[dict[str, Any]]:
    """A user keyword not on its helpful documents -> the one document keyword best associated with it."""
    kw_docs: dict[str, int] = defaultdict(int)
    for kws in doc_kw.values():
        for kw in kws:
            kw_docs[kw] += 1
    gap, gap_neg, gap_fb = _gap_evidence(events, doc_kw)
    items = []
    for k in sorted(gap):
        def net(m: str) -> int:
            return len(gap[k][m]) - len(gap_neg[(k, m)])
        ranked = sorted(gap[k], key=lambda m: (-net(m), kw_docs[m], m))
        best = ranked[0]
        if net(best) < min_queries:
            continue
        if len(ranked) > 1 and net(ranked[1]) == net(best) and kw_docs[ranked[1]] == kw_docs[best]:
            continue  # no single best-associated keyword: do not guess
        a, b = sorted((k, best))
        items.append({"kind": "similarity", "key": f"similarity:{a}|{b}", "keyword1": k, "keyword2": best,
                      "type": "related_concept", "score": round(min(0.9, 0.5 + 0.1 * net(best)), 4),
                      "evidence": len(gap[k][best]), "against": len(gap_neg[(k, best)]),
                      "feedback_ids": sorted(set(gap_fb[(k, best)])),
                      "reason": f"{len(gap[k][best])} queries searched '{k}'; their helpful documents are tagged "
                                f"'{best}'"})
    return items


def _co_occurrences(events: list[Event], have: set[str], min_queries: int) -> list[dict[str, Any]]:
    """Two user keywords used together in >= min_queries successful queries."""
    successful: dict[int, set[str]] = {}
    for e in events:
        if e.helpful:
            successful.setdefault(e.query_id, set()).update(k for k in e.explicit if k)
    pairs: dict[tuple[str, str], set[Any]] = defaultdict(set)
    for qid, kws in successful.items():
        ks = sorted(kws)
        for i in range(len(ks)):
            for j in range(i + 1, len(ks)):
                pairs[(ks[i], ks[j])].add(qid)
    items = []
    for (a, b), qids in sorted(pairs.items()):
        key = f"similarity:{a}|{b}"
        if len(qids) >= min_queries and key not in have:
            fb = sorted(e.feedback_id for e in events if e.helpful and e.query_id in qids)
            items.append({"kind": "similarity", "key": key, "keyword1": a, "keyword2": b, "type": "related_concept",
                          "score": 0.6, "evidence": len(qids), "feedback_ids": fb,
                          "reason": f"'{a}' and '{b}' were used together in {len(qids)} successful queries"})
    return items


def _score_changes(events: list[Event]) -> list[dict[str, Any]]:
    """Similarity scores from expansion success (delta 0 when helpful and not-helpful cancel out)."""
    rel: dict[int, dict[str, Any]] = {}
    for e in events:
        for x in e.expansions:
            r = rel.setdefault(int(x["relation_id"]), {"h": 0, "n": 0, "fb": []})
            r["h" if e.helpful else "n"] += 1
            r["fb"].append(e.feedback_id)
    items = []
    for rid, r in sorted(rel.items()):
        delta = max(-SCORE_CAP, min(SCORE_CAP, SCORE_STEP * (r["h"] - r["n"])))
        items.append({"kind": "score", "key": f"score:{rid}", "similarity_id": rid, "delta": round(delta, 4),
                      "helpful": r["h"], "not_helpful": r["n"], "feedback_ids": sorted(r["fb"]),
                      "reason": f"expansion led to {r['h']} helpful and {r['n']} not-helpful documents"})
    return items


def inactive(item: dict[str, Any]) -> bool:
    """An item that asks for nothing (weight, score or delta 0): never created, only used to undo."""
    kind = item["kind"]
    if kind == "score":
        return not item.get("delta")
    if kind == "similarity":
        return not item.get("score")
    return not item.get("weight")


def _withdrawals(conn: Connection, derived: set[str], feedback_ids: set[int]) -> list[dict[str, Any]]:
    """Active (and pending) learned items that the current feedback no longer justifies.

    Only items whose feedback still exists are re-judged: clearing the history keeps what
    was learned from it.
    """
    out = []
    for r in conn.execute("SELECT * FROM learned_items WHERE status IN ('active', 'pending') ORDER BY id"):
        if r["key"] in derived:
            continue
        cited = set(json.loads(r["feedback_ids"] or "[]"))
        if not cited & feedback_ids:
            continue
        detail = json.loads(r["detail"])
        if inactive(dict(detail, kind=r["kind"])):
            continue   # withdrawn already
        item = dict(detail, kind=r["kind"], key=r["key"], feedback_ids=sorted(cited & feedback_ids),
                    reason="withdrawn: the feedback no longer supports it (was: " + str(detail.get("reason")) + ")")
        _zero(item)
        out.append(item)
    return out


def _zero(item: dict[str, Any]) -> None:
    """Make an item ask for nothing (:func:`inactive`): applied, it undoes what it did."""
    item["delta" if item["kind"] == "score" else "score" if item["kind"] == "similarity" else "weight"] = 0.0
