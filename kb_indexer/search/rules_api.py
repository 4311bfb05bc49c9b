"""The rules sub-API: ``kb.rules`` of :class:`kb_indexer.api.KnowledgeBase` (built on first use).

    with KnowledgeBase.open() as kb:
        kb.rules.pin("alphago", "alphago-architecture.md", reason="the canonical overview")
        kb.rules.list()

Pin and hide rules (:mod:`kb_indexer.search.rules`) are a team's curation: on PostgreSQL making or removing one
needs the curator role (or the owner); everyone may list them. Each write is one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

from kb_indexer.limits import check_id, check_text_arg
from kb_indexer.search.rules import add_rule, check_rule, list_rules, remove_rule
from kb_indexer.store.connection import transaction
from kb_indexer.store.dbapi import Connection
from kb_indexer.store.documents import require_document
from kb_indexer.store.errors import translating
from kb_indexer.store.team import require_role

if TYPE_CHECKING:
    from kb_indexer.results import RuleRemoveResult, RuleResult, RulesListResult


class Paths(Protocol):
    """What rules need of the facade: its connection and its path rule."""

    conn: Connection

    def stored_path(self, path: str) -> str: ...


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class RulesAPI:
    """Pin and hide rules: pin, hide, list, remove."""

    def __init__(self, kb: Paths) -> None:
        self.kb = kb
        self.conn = kb.conn

    def pin(self, pattern: str, path: str, reason: str | None = None) -> RuleResult:
        """Show the document at ``path`` first for every question with the terms of ``pattern``."""
        return self._add("pin", pattern, path, reason)

    def hide(self, pattern: str, path: str, reason: str | None = None) -> RuleResult:
        """Leave the document at ``path`` out of every question with the terms of ``pattern``."""
        return self._add("hide", pattern, path, reason)

    def _add(self, action: str, pattern: str, path: str, reason: str | None) -> RuleResult:
        terms = check_rule(action, pattern, reason)
        stored = self.kb.stored_path(check_text_arg(path, "path"))   # outside the KB root: refused
        require_role(self.conn, "curator", f"rules {action}")
        with transaction(self.conn):
            filepath = require_document(self.conn, stored)["filepath"]   # not indexed: not_found, nothing written
            rule, created = add_rule(self.conn, action, pattern, terms, filepath, reason)
        return cast("RuleResult", {"created": created, "rule": rule})

    def list(self) -> RulesListResult:
        """Every rule, by id (``indexed``: a document has its path; else it does nothing)."""
        rules = list_rules(self.conn)
        return cast("RulesListResult", {"rules": rules, "count": len(rules)})

    def remove(self, rule_id: int) -> RuleRemoveResult:
        """Delete a rule (not_found if there is none with that id)."""
        check_id(rule_id, "the rule id")
        require_role(self.conn, "curator", "rules remove")
        with transaction(self.conn):
            rule = remove_rule(self.conn, rule_id)
        return cast("RuleRemoveResult", {"removed": rule})
