"""The knowledge-base tools a chat model may call (knowledge-base mode only), and running them.

Three tools, over the same Python API as the CLI: ``kb_query`` (ranked retrieval, recorded like any
query, so feedback can follow), ``kb_show`` (one document's text, the first ``MAX_RESULT_CHARS``) and
``kb_similar`` (related keywords). A tool's result goes back to the model as text of at most
``MAX_RESULT_CHARS``; a failing call (unknown document, bad arguments) becomes an error text for the
model, not an exception, so the loop can go on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kb_indexer.api import QueryOptions, render_query
from kb_indexer.errors import KbError
from kb_indexer.llm.base import Tool

if TYPE_CHECKING:
    from kb_indexer.api import KnowledgeBase

MAX_RESULT_CHARS = 4000
MAX_TOOL_ROUNDS = 4          # model -> tools -> model rounds in one turn (the safe loop limit)

TOOLS = [
    Tool("kb_query", "Search the knowledge base; returns ranked documents with paths and snippets.",
         {"type": "object", "properties": {"question": {"type": "string", "description": "what to look for"},
                                           "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
          "required": ["question"]}),
    Tool("kb_show", "Read one document of the knowledge base by its path.",
         {"type": "object", "properties": {"path": {"type": "string", "description": "the document's path"}},
          "required": ["path"]}),
    Tool("kb_similar", "Keywords related to a keyword (synonyms, abbreviations, related concepts).",
         {"type": "object", "properties": {"keyword": {"type": "string"}}, "required": ["keyword"]}),
]


def _cut(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS - 1] + "…"


def _query(kb: Any, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    asked = args.get("limit")
    limit = asked if isinstance(asked, int) else 5
    out = kb.query(str(args.get("question") or ""), options=QueryOptions(limit=max(1, min(10, limit))))
    paths = [r["filepath"] for r in out["results"]]
    return render_query(out), {"query_id": out.get("query_id"), "paths": paths,
                               "summary": f"{len(paths)} documents: {', '.join(paths[:5])}"}


def _show(kb: KnowledgeBase, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    doc = kb.read(str(args.get("path") or ""), limit=MAX_RESULT_CHARS)
    path = doc["filepath"]
    body = doc["text"] or kb.show(path).get("summary") or ""
    return f"# {doc.get('title') or path}\nPath: {path}\n\n{body}", {"paths": [path], "summary": f"read {path}"}


def _similar(kb: KnowledgeBase, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    out = kb.similar(str(args.get("keyword") or ""), limit=20)
    lines = [f"- {i.get('keyword')} ({i.get('similarity_type')}, {i.get('score')})"
             for i in out.get("similar_keywords") or []]
    return "\n".join(lines) or "no related keywords", {"summary": f"{out['total']} related keywords"}


RUNNERS = {"kb_query": _query, "kb_show": _show, "kb_similar": _similar}


def run_tool(kb: KnowledgeBase, name: str, arguments: Any) -> tuple[str, dict[str, Any]]:
    """(text for the model, info for the front end: ok, summary, paths, query_id)."""
    runner = RUNNERS.get(name)
    if runner is None:
        return f"error: no tool named {name!r}", {"ok": False, "summary": f"unknown tool {name}"}
    if not isinstance(arguments, dict):
        return "error: the arguments must be a JSON object", {"ok": False, "summary": "bad arguments"}
    try:
        text, info = runner(kb, arguments)
    except KbError as exc:
        return f"error: {exc.message}", {"ok": False, "summary": exc.message}
    return _cut(text), {"ok": True, **info}


def describe_call(name: str, arguments: Any) -> str:
    return f"{name}({json.dumps(arguments, ensure_ascii=False)[:200]})"
