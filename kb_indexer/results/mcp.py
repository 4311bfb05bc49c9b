"""Results of the MCP tools (their ``outputSchema`` is derived from these: :mod:`kb_indexer.mcp.outputs`)."""

from __future__ import annotations

from kb_indexer.results.common import NotRequired, TypedDict
from kb_indexer.results.query import Expansion


# The nested type names (QueryHit, Expansion, Related, Skill) are the ``$defs`` names of the tools' output
# schemas a client reads; short, and without docstrings (a docstring becomes a schema ``description``), as
# the catalog is read before every conversation.
class QueryHit(TypedDict):  # a kb_query hit: the fields of RankedDocument an agent needs, summary clipped
    filepath: str
    title: str | None
    relevance_score: float
    snippet: NotRequired[str | None]
    summary: NotRequired[str | None]
    matched_keywords: NotRequired[list[str]]
    keyword_expansions: NotRequired[list[Expansion]]
    sources: NotRequired[list[str]]
    reasoning: NotRequired[str]


class McpQueryResult(TypedDict):
    query_id: int | None
    keywords: list[str]
    expanded_keywords: list[str]
    # Expanded keywords past the cap (the strongest 200 of each keyword are kept). Absent when none were.
    expansions_omitted: NotRequired[int]
    method: str | None
    total: int
    results: list[QueryHit]
    # What did not run as asked, "; "-joined: semantic/hybrid without vectors ("lexical (no vectors used):
    # why"), a context the LLM did not judge ("lexical: why"). Absent when everything ran as asked.
    fallback: NotRequired[str | None]
    # Files changed since the last sync (the stale check's one-line message, as `kbindex query` says on stderr):
    # the results may miss them. Absent when the index is up to date, on a continuation, or not checked.
    stale: NotRequired[str]
    next_cursor: str | None


class McpDocumentResult(TypedDict):
    filepath: str
    title: str | None
    offset: int
    total_chars: int
    text: str
    keywords: NotRequired[list[str]]
    next_cursor: str | None


class Related(TypedDict):  # a kb_similar item: the fields of SimilarKeyword an agent needs
    keyword: str
    similarity_type: str
    score: float
    context: NotRequired[str | None]


class McpSimilarResult(TypedDict):
    keyword: str
    user_context: NotRequired[str | None]
    count: int
    similar_keywords: list[Related]
    fallback: NotRequired[str | None]
    next_cursor: str | None


class McpFeedbackResult(TypedDict):
    query_id: int
    recorded: int
    not_in_results: NotRequired[list[str]]   # marked files the query never returned (recorded all the same)


class Skill(TypedDict):  # a skills_match item: the fields of MatchedSkill an agent needs, description clipped
    name: str
    description: NotRequired[str | None]
    score: NotRequired[float]
    reason: NotRequired[str | None]


class McpSkillsResult(TypedDict):
    matched: list[Skill]
    method: str | None
    fallback: NotRequired[str | None]
    loaded: list[str]
    evicted: list[str]
    next_cursor: str | None
