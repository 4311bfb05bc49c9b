"""The MCP resources of an index: ``kbindex://report`` (``kbindex report --format json``: what the history
says, JSON), ``skill://<name>/SKILL.md`` for every indexed skill (its file on disk, read
as ``skills sync`` reads it) and ``kb://<path>`` for every document (its indexed text), the last two advertised as
resource templates, all listed in pages of ``PAGE`` (the report, skills by name, then documents by path) with a cursor
(:mod:`kb_indexer.mcp.paging`). These functions block (SQLite, files): the server runs them in worker
threads, each opening its own connection to the index.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from kb_indexer.errors import UsageError
from kb_indexer.mcp.paging import clip, make_cursor, parse_cursor

if TYPE_CHECKING:
    from kb_indexer.api import KnowledgeBase

PAGE = 100
SKILL_TEMPLATE = "skill://{name}/SKILL.md"
DOC_TEMPLATE = "kb://{+path}"
_SKILL_PREFIX, _SKILL_SUFFIX = "skill://", "/SKILL.md"
_DOC_PREFIX = "kb://"
_SCOPE = "resources/list"
REPORT_URI = "kbindex://report"
_REPORT = {"uri": REPORT_URI, "name": "report", "mime_type": "application/json",
           "description": "What the recorded history says: questions that found nothing, asked twice and never "
                          "marked helpful, most asked, the feedback rate, documents never returned "
                          "(kbindex report --format json)"}


def templates() -> list[dict[str, Any]]:
    return [{"uri_template": SKILL_TEMPLATE, "name": "skill", "mime_type": "text/markdown",
             "description": "An indexed skill's SKILL.md (names: skills_match, or resources/list)"},
            {"uri_template": DOC_TEMPLATE, "name": "document", "mime_type": "text/markdown",
             "description": "A document's indexed text, by its path in the knowledge base (kb_query finds them)"}]


def skill_uri(name: str) -> str:
    return f"{_SKILL_PREFIX}{quote(name, safe='')}{_SKILL_SUFFIX}"


def doc_uri(path: str) -> str:
    return f"{_DOC_PREFIX}{quote(path)}"


def list_page(kb: KnowledgeBase, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """One page of resources (at most ``PAGE``) from ``cursor``, and the next cursor (None: the last)."""
    offset, _ = parse_cursor(cursor, _SCOPE)
    skills = kb.skills.all()["skills"]        # by name (a few: not paged in SQL)
    first = [_REPORT] + [{"uri": skill_uri(s["name"]), "name": s["name"], "description": clip(s["description"], 200),
                          "mime_type": "text/markdown"} for s in skills]
    out = first[offset:offset + PAGE]
    out += [{"uri": doc_uri(d["filepath"]), "name": d["filepath"], "title": d["title"], "mime_type": "text/markdown"}
            for d in kb.list_docs(offset=max(0, offset - len(first)), limit=PAGE + 1 - len(out))["documents"]]
    if len(out) <= PAGE:
        return out, None
    return out[:PAGE], make_cursor(offset + PAGE, _SCOPE)


def read(kb: KnowledgeBase, uri: str) -> str:
    """The text of a resource (a missing skill or document, or a refused SKILL.md: a kbindex error)."""
    if uri == REPORT_URI:
        return json.dumps(kb.learning.report(), ensure_ascii=False)
    if uri.startswith(_SKILL_PREFIX) and uri.endswith(_SKILL_SUFFIX):
        return kb.skills.source(unquote(uri[len(_SKILL_PREFIX):-len(_SKILL_SUFFIX)]))
    if uri.startswith(_DOC_PREFIX):
        return kb.read(unquote(uri[len(_DOC_PREFIX):]))["text"]
    raise UsageError(f"Unknown resource: {uri[:200]!r} (kbindex serves {REPORT_URI}, {SKILL_TEMPLATE} and "
                     f"{DOC_TEMPLATE})")
