"""Results of ``search`` and ``query``."""

from __future__ import annotations

from kb_indexer.results.common import CacheCounts, JsonObject, LlmReport, NotRequired, TypedDict
from kb_indexer.results.index import StaleNote
from kb_indexer.results.rules import HiddenByRule, RuleNote


class SearchQuery(TypedDict):
    keywords: list[str]
    mode: str


class SearchHit(TypedDict):
    filepath: str
    title: str | None
    summary: str | None
    matched_keywords: list[str]
    user_keywords: list[str]
    rule: NotRequired[RuleNote]              # a pinned result: the rule that placed it (search/rules.py)


class SearchResult(TypedDict):
    query: SearchQuery
    results: list[SearchHit]
    count: int
    total: int
    hidden_by_rules: NotRequired[list[HiddenByRule]]   # documents matched that a hide rule left out


class Expansion(TypedDict):  # a keyword a document matched through a relation of a query keyword
    original: str
    expanded: str
    similarity_type: str
    weight: float


class Evidence(TypedDict):
    user_keyword: str
    keyword: str
    kind: str
    value: float
    expansion_weight: float
    similarity_type: NotRequired[str]
    relation_id: NotRequired[int]


class ScoreParts(TypedDict):
    """A hit's score by channel (``explain``): ``relevance_score`` = max(0, sum over channels of ``weights[c]`` x
    the channel's part + ``learned``) / ``scale`` + ``neighbours`` (with ``--rerank``: ``fused_score``)."""
    keyword: float
    fulltext: float
    dense: float
    cosine: float | None
    learned: float
    bm25: float | None
    weights: dict[str, float]
    scale: float   # 1 + the largest learned boost, over 1 - the neighbours' weight when neighbours ran; else 1
    evidence: list[Evidence]
    neighbours: NotRequired[float]   # the part of the score its neighbours among the best results gave


class RankedDocument(TypedDict):
    """One hit of ``query``."""
    filepath: str
    title: str | None
    summary: str | None
    matched_keywords: list[str]
    user_keywords: list[str]
    keyword_expansions: list[Expansion]
    relevance_score: float
    similarity: float
    sources: list[str]
    source: str
    reasoning: str
    snippet: str | None
    score_parts: NotRequired[ScoreParts]
    rule: NotRequired[RuleNote]              # a pinned result: the rule that placed it first (search/rules.py)
    ranked_by: NotRequired[str]              # with --rerank: "fused", "fused+llm_rerank" / "fused+cross_encoder",
                                             # or "rule" (a pinned result: the rerank leaves it on top)
    rerank_score: NotRequired[float]         # the rerank stage's judgement, 0..1 (relevance_score blends it)
    fused_score: NotRequired[float]          # relevance_score before the blend


class QueryEcho(TypedDict):
    """The query as it ran: keywords, their expansion, method and thresholds."""
    question: str
    keywords: list[str]
    keywords_from: str
    expanded_keywords: list[str]
    expansion_map: dict[str, list[str]]
    # Only when a keyword had more expansions than the cap: the cap (expansions kept per user keyword, the
    # strongest) and how many more passed the minimum weight.
    expansion_limit: NotRequired[int]
    expansions_omitted: NotRequired[int]
    context: str | None
    threshold: float
    min_weight: float
    context_threshold: float
    expand_depth: int
    method: str
    method_requested: str
    method_reason: str
    fallback: str | None
    explain: NotRequired[JsonObject]


class SemanticReport(TypedDict):
    """How the vectors of a semantic or hybrid query were used (or why not)."""
    backend: str | None
    model: str | None
    used: bool
    error: str | None
    configured: bool
    # what embedded the question: "numpy" or "sentence-transformers" (local), "cache" (the LLM cache had its
    # vector), None (a server's backend, or no question embedded)
    encoder: NotRequired[str | None]
    documents_without_vectors: NotRequired[int | None]
    files_without_vectors: NotRequired[list[str] | None]
    chunks: NotRequired[int]
    documents: NotRequired[int]


class QueryResult(TypedDict):
    query: QueryEcho
    results: list[RankedDocument]
    count: int
    total: int
    keyword_search_count: int
    grep_search_count: int
    semantic_search_count: NotRequired[int]
    semantic: NotRequired[SemanticReport]
    query_id: NotRequired[int | None]
    attempt_id: NotRequired[int | None]
    history_error: NotRequired[str]
    stale: NotRequired[StaleNote | None]     # the CLI's query: files changed since the last sync (else null)
    history_error_code: NotRequired[str]
    llm: NotRequired[LlmReport]
    cache: NotRequired[CacheCounts]
    rerank: NotRequired[JsonObject]          # with --rerank: which stage ranked the top results (search/rerank.py)
    hidden_by_rules: NotRequired[list[HiddenByRule]]   # documents found that a hide rule left out
