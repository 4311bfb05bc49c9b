"""Pin and hide rules: a team's curation of what a question shows (``kbindex rules``; docs/teams.md, "Pin and
hide rules").

A rule joins a pattern (a question or a few keywords), a document and an action: ``pin`` shows the document
first, ``hide`` does not show it. A rule fires for a question when every one of its terms (the pattern's content
terms, normalised as learning compares questions: :func:`kb_indexer.search.terms.question_terms`) is among the
question's terms: ``rules pin "alphago" alphago-architecture.md`` fires for "how does AlphaGo work?".

Rules apply in ``query`` and ``search`` after fusion and the learned boosts, so nothing learned moves a pin or
shows a hidden document: pinned documents come first, in rule id order (pulled in when the question did not find
them), hidden ones are left out (a document both pinned and hidden is hidden), the rest keep their order, and a
rerank reorders only the rest. Each pinned result names its rule (``rule``); the documents the question found
that a rule left out are listed (``hidden_by_rules``). A rule acts on documents, never on relations: a person's
``relate`` and ``unrelate`` stay as they are. A rule names its document by path: while no document has that
path (not synced yet, or renamed), the rule does nothing (``rules list`` shows ``indexed: false``).

Cost: a query reads the rules with one statement (:func:`fired`); on an index without rules that is all it pays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from kb_indexer.errors import NotFoundError, UsageError
from kb_indexer.limits import check_utf8
from kb_indexer.search.reasoning import design_source
from kb_indexer.search.terms import question_terms
from kb_indexer.store.dbapi import Connection

ACTIONS = ("pin", "hide")
MAX_PATTERN_CHARS = 1000
MAX_REASON_CHARS = 2000
RULE_SOURCE = "rule"    # a pinned result's source (a curated question -> document association)

_SELECT = ("SELECT r.id, r.action, r.pattern, r.terms, r.filepath, r.reason, r.author, r.created_at, d.id "
           "FROM search_rules r LEFT JOIN documents d ON d.filepath = r.filepath")

Rule = dict[str, Any]


def _rule(row: Any) -> Rule:
    return {"id": row[0], "action": row[1], "pattern": row[2], "terms": json.loads(row[3]), "filepath": row[4],
            "reason": row[5], "author": row[6], "created_at": row[7], "indexed": row[8] is not None}


def note(rule: Rule) -> Rule:
    """What a result says of the rule that placed it."""
    return {"id": rule["id"], "action": rule["action"], "pattern": rule["pattern"], "reason": rule["reason"],
            "author": rule["author"]}


@dataclass
class Fired:
    """The rules that fire for one question, by document id (the first rule of each document, in id order)."""

    pins: dict[int, Rule]
    hides: dict[int, Rule]
    hidden: list[dict[str, Any]] = field(default_factory=list)   # found by the question, then left out
    pulled_in: int = 0                                           # pinned documents the question did not find

    def explain(self) -> list[Rule]:
        return [{**note(r), "terms": r["terms"], "filepath": r["filepath"]}
                for r in sorted([*self.pins.values(), *self.hides.values()], key=lambda r: r["id"])]


def fired(conn: Connection, text: str) -> Fired | None:
    """The rules that fire for a question (``text``: the question and any keywords given); None when none do.
    One statement: an index without rules pays nothing more."""
    rows = conn.execute(_SELECT + " ORDER BY r.id").fetchall()
    if not rows:
        return None
    terms = set(question_terms(text))
    pins: dict[int, Rule] = {}
    hides: dict[int, Rule] = {}
    for row in rows:
        if row[8] is not None and set(json.loads(row[3])) <= terms:
            (hides if row[1] == "hide" else pins).setdefault(row[8], _rule(row))
    for doc_id in hides:   # hidden wins over pinned
        pins.pop(doc_id, None)
    return Fired(pins, hides) if pins or hides else None


# -- applied to a query's fused scores and results ------------------------------------------------------------
def apply_to_scores(fired: Fired, scores: dict[int, float]) -> list[int]:
    """Leave the hidden documents out of a query's fused scores (noting those the question found) and give the
    pinned ones it did not find a score of 0; returns the pinned document ids, in rule order."""
    for doc_id, rule in fired.hides.items():
        if scores.pop(doc_id, None) is not None:
            fired.hidden.append({"filepath": rule["filepath"], "rule_id": rule["id"]})
    for doc_id in fired.pins:
        if doc_id not in scores:
            scores[doc_id] = 0.0
            fired.pulled_in += 1
    return list(fired.pins)


def annotate(fired: Fired, results: list[dict[str, Any]]) -> None:
    """Each pinned result names its rule (``rule``), and a query's result its source and reasoning too."""
    by_path = {rule["filepath"]: rule for rule in fired.pins.values()}
    for result in results:
        rule = by_path.get(result["filepath"])
        if rule is None:
            continue
        result["rule"] = note(rule)
        if "sources" in result:
            result["sources"] = [*result["sources"], RULE_SOURCE]
            result["source"] = design_source(result["sources"])
            why = f" ({rule['reason']})" if rule["reason"] else ""
            found = result["reasoning"]
            result["reasoning"] = f"Pinned by rule {rule['id']} for '{rule['pattern']}'{why}." + (
                "" if found == "No evidence recorded." else f" {found}")


def rerank_rest(results: list[dict[str, Any]],
                reranker: Callable[[list[dict[str, Any]]], dict[str, Any]]) -> dict[str, Any]:
    """Rerank the results below the pinned ones (a rerank never moves a pin off the top)."""
    pinned = 0
    while pinned < len(results) and "rule" in results[pinned]:
        pinned += 1
    rest = results[pinned:]
    report = reranker(rest)
    results[pinned:] = rest
    for result in results[:pinned]:
        result["ranked_by"] = RULE_SOURCE
    return report


# -- the rules themselves ---------------------------------------------------------------------------------------
def check_rule(action: Any, pattern: Any, reason: Any) -> list[str]:
    """A rule's action, pattern and reason checked (bad usage otherwise); returns the pattern's terms."""
    if action not in ACTIONS:
        raise UsageError(f"a rule's action is pin or hide, not {action!r}")
    if not isinstance(pattern, str) or not pattern.strip():
        raise UsageError("give the question or keywords the rule applies to (a non-empty text)")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UsageError(f"a rule's pattern is at most {MAX_PATTERN_CHARS} characters, got {len(pattern)}")
    check_utf8(pattern, "the pattern")
    if reason is not None:
        if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
            raise UsageError(f"--reason is a text of at most {MAX_REASON_CHARS} characters")
        check_utf8(reason, "--reason")
    terms = question_terms(pattern)
    if not terms:
        raise UsageError(f"the pattern {pattern!r} has no content words (only stopwords or punctuation): it would "
                         "match every question")
    return terms


def add_rule(conn: Connection, action: str, pattern: str, terms: list[str], filepath: str,
             reason: str | None) -> tuple[Rule, bool]:
    """The rule (created, or the same one already there: False), inside the caller's transaction."""
    text = json.dumps(terms, ensure_ascii=False)
    where = " WHERE r.action = ? AND r.terms = ? AND r.filepath = ?"
    row = conn.execute(_SELECT + where, (action, text, filepath)).fetchone()
    if row is not None:
        return _rule(row), False
    conn.execute("INSERT INTO search_rules (action, pattern, terms, filepath, reason, author) "
                 "VALUES (?, ?, ?, ?, ?, kb_asker())", (action, pattern, text, filepath, reason))
    return _rule(conn.execute(_SELECT + where, (action, text, filepath)).fetchone()), True


def list_rules(conn: Connection) -> list[Rule]:
    return [_rule(row) for row in conn.execute(_SELECT + " ORDER BY r.id").fetchall()]


def remove_rule(conn: Connection, rule_id: int) -> Rule:
    """Delete one rule (inside the caller's transaction); not_found if there is none with that id."""
    row = conn.execute(_SELECT + " WHERE r.id = ?", (rule_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"No rule {rule_id} (`kbindex rules list` lists them)")
    conn.execute("DELETE FROM search_rules WHERE id = ?", (rule_id,))
    return _rule(row)
