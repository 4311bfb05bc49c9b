"""Results of ``rules`` (pin and hide rules) and what ``query`` and ``search`` say of the rules that fired."""

from __future__ import annotations

from kb_indexer.results.common import TypedDict


class RuleNote(TypedDict):
    """The rule that placed a result (``rule`` on a pinned result)."""
    id: int
    action: str            # pin
    pattern: str           # the question or keywords the rule was given
    reason: str | None
    author: str            # who made it (the asker: store/team.py)


class HiddenByRule(TypedDict):
    """A document the question found that a hide rule left out."""
    filepath: str
    rule_id: int


class SearchRule(TypedDict):
    id: int
    action: str            # pin | hide
    pattern: str
    terms: list[str]       # the pattern's normalised terms: the rule fires when a question has them all
    filepath: str
    reason: str | None
    author: str
    created_at: str
    indexed: bool          # a document has this path (else the rule does nothing)


class RuleResult(TypedDict):
    """``rules pin`` / ``rules hide``: the rule, and whether it was made now (False: the same rule was there)."""
    created: bool
    rule: SearchRule


class RulesListResult(TypedDict):
    rules: list[SearchRule]
    count: int


class RuleRemoveResult(TypedDict):
    removed: SearchRule
