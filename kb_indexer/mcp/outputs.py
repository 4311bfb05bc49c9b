"""The typed results of the MCP tools: each tool's ``outputSchema`` is built from these, and the SDK checks
every structured result against it. Fields a tool may leave out are ``NotRequired``; nothing here is
``dict[str, Any]``, so a client sees the shape before its first call. (``typing_extensions`` TypedDicts:
pydantic reads only those below Python 3.12; it is installed with the SDK.)"""

from __future__ import annotations

from typing import Optional

from typing_extensions import NotRequired, TypedDict


class Expansion(TypedDict):
    original: str
    expanded: str
    similarity_type: str
    weight: float


class QueryHit(TypedDict):
    filepath: str
    title: Optional[str]
    relevance_score: float
    snippet: NotRequired[Optional[str]]
    summary: NotRequired[Optional[str]]
    matched_keywords: NotRequired[list[str]]
    keyword_expansions: NotRequired[list[Expansion]]
    sources: NotRequired[list[str]]
    reasoning: NotRequired[str]


class QueryOut(TypedDict):
    query_id: Optional[int]
    keywords: list[str]
    expanded_keywords: list[str]
    method: Optional[str]
    total: int
    results: list[QueryHit]
    fallback: NotRequired[Optional[str]]
    next_cursor: Optional[str]


class DocumentOut(TypedDict):
    filepath: str
    title: Optional[str]
    offset: int
    total_chars: int
    text: str
    keywords: NotRequired[list[str]]
    next_cursor: Optional[str]


class Related(TypedDict):
    keyword: str
    similarity_type: str
    score: float
    context: NotRequired[Optional[str]]


class SimilarOut(TypedDict):
    keyword: str
    user_context: NotRequired[Optional[str]]
    count: int
    similar_keywords: list[Related]
    fallback: NotRequired[Optional[str]]
    next_cursor: Optional[str]


class FeedbackOut(TypedDict):
    query_id: int
    recorded: int


class Skill(TypedDict):
    name: str
    description: NotRequired[Optional[str]]
    score: NotRequired[float]
    reason: NotRequired[Optional[str]]


class SkillsOut(TypedDict):
    matched: list[Skill]
    method: Optional[str]
    fallback: NotRequired[Optional[str]]
    loaded: list[str]
    evicted: list[str]
    next_cursor: Optional[str]


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
