"""The MCP resources of an index: ``skill://<name>/SKILL.md`` for every indexed skill (its file on disk, read
as ``skills sync`` reads it) and ``kb://<path>`` for every document (its indexed text), advertised as two
resource templates and listed in pages of ``PAGE`` (skills by name, then documents by path) with a cursor
(:mod:`kb_indexer.mcp.paging`). These functions block (SQLite, files): the server runs them in worker
threads, each opening its own connection to the index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from kb_indexer.errors import UsageError
from kb_indexer.mcp.paging import clip, make_cursor, parse_cursor
from kb_indexer.store.documents import get_body, require_document

if TYPE_CHECKING:
    from kb_indexer.api import KnowledgeBase

PAGE = 100
SKILL_TEMPLATE = "skill://{name}/SKILL.md"
DOC_TEMPLATE = "kb://{+path}"
_SKILL_PREFIX, _SKILL_SUFFIX = "skill://", "/SKILL.md"
_DOC_PREFIX = "kb://"
_SCOPE = "resources/list"


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
    n_skills = kb.conn.execute("SELECT COUNT(*) FROM skills").fetchone()[0]
    out = [{"uri": skill_uri(r[0]), "name": r[0], "description": clip(r[1], 200), "mime_type": "text/markdown"}
           for r in kb.conn.execute("SELECT name, description FROM skills ORDER BY name LIMIT ? OFFSET ?",
                                    (PAGE, offset))] if offset < n_skills else []
    out += [{"uri": doc_uri(r[0]), "name": r[0], "title": r[1], "mime_type": "text/markdown"}
            for r in kb.conn.execute("SELECT filepath, title FROM documents ORDER BY filepath LIMIT ? OFFSET ?",
                                     (PAGE + 1 - len(out), max(0, offset - n_skills)))]
    if len(out) <= PAGE:
        return out, None
    return out[:PAGE], make_cursor(offset + PAGE, _SCOPE)


def read(kb: KnowledgeBase, uri: str) -> str:
    """The text of a resource (a missing skill or document, or a refused SKILL.md: a kbindex error)."""
    if uri.startswith(_SKILL_PREFIX) and uri.endswith(_SKILL_SUFFIX):
        return kb.skills_source(unquote(uri[len(_SKILL_PREFIX):-len(_SKILL_SUFFIX)]))
    if uri.startswith(_DOC_PREFIX):
        doc = require_document(kb.conn, kb.show(unquote(uri[len(_DOC_PREFIX):]))["filepath"])
        return get_body(kb.conn, doc["id"])
    raise UsageError(f"Unknown resource: {uri[:200]!r} (kbindex serves {SKILL_TEMPLATE} and {DOC_TEMPLATE})")
