"""The typed results of the MCP tools: the types live in :mod:`kb_indexer.results` (``Mcp*Result`` and the
items they hold), beside the API results they are cut from; the names below are the tools' return
annotations, from which the SDK builds each tool's ``outputSchema`` (:func:`output_schema` derives the same
schema) and checks every structured result against it. Fields a tool may leave out are ``NotRequired``;
nothing here is ``dict[str, Any]``, so a client sees the shape before its first call."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from kb_indexer.results import Expansion, McpDocumentResult, McpFeedbackResult, McpQueryResult
from kb_indexer.results import McpSimilarResult, McpSkillsResult, QueryHit, Related, Skill

__all__ = ["DocumentOut", "Expansion", "FeedbackOut", "QueryHit", "QueryOut", "Related", "SimilarOut", "Skill",
           "SkillsOut", "TOOL_RESULTS", "compact_schema", "output_schema"]

QueryOut = McpQueryResult
DocumentOut = McpDocumentResult
SimilarOut = McpSimilarResult
FeedbackOut = McpFeedbackResult
SkillsOut = McpSkillsResult

#: Each tool's result type.
TOOL_RESULTS: dict[str, type[Any]] = {"kb_query": McpQueryResult, "kb_get": McpDocumentResult,
                                      "kb_similar": McpSimilarResult, "kb_feedback": McpFeedbackResult,
                                      "skills_match": McpSkillsResult}


def output_schema(result_type: type[Any]) -> dict[str, Any]:
    """The JSON schema of a result type (a TypedDict of :mod:`kb_indexer.results`), as a tool's
    ``outputSchema``: pydantic's schema of the type, compacted (:func:`compact_schema`)."""
    schema = compact_schema(TypeAdapter(result_type).json_schema())
    if not isinstance(schema, dict):
        raise TypeError(f"{result_type!r} has no object schema")
    return schema


def compact_schema(schema: object) -> object:
    """The same JSON schema in fewer tokens, for the tool catalog a client reads before every conversation:
    no ``title`` annotations (pydantic's ``"title": "Question"`` beside a property named question), no
    ``"default": null``, and ``anyOf [X, null]`` of a plain type spelled ``"type": [X, "null"]``. What a value
    may be is unchanged (results are still validated against the full model). A property that is *named*
    ``title`` or ``default`` is kept: only string titles and null defaults, which are annotations, go."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: compact_schema(value) for key, value in schema.items()
           if not (key == "title" and isinstance(value, str)) and not (key == "default" and value is None)}
    alternatives = out.get("anyOf")
    if isinstance(alternatives, list) and len(alternatives) == 2 and {"type": "null"} in alternatives:
        other = next(alt for alt in alternatives if alt != {"type": "null"})
        if isinstance(other, dict) and set(other) == {"type"} and isinstance(other["type"], str):
            del out["anyOf"]
            out["type"] = [other["type"], "null"]
    return out
