"""Results of the automatic-indexing half of the API (enrich, suggest-similarities)."""

from __future__ import annotations

from kb_indexer.results.common import JsonObject, LlmReport, NotRequired, Relation, TypedDict


class EnrichedDocument(TypedDict):
    """One document of ``enrich``: what was generated, or (``skipped``, ``unchanged``, ``failed``) why not."""
    filepath: str
    action: str
    reason: NotRequired[str]
    error: NotRequired[str]
    method: NotRequired[str]
    fallback: NotRequired[str | None]
    model: NotRequired[str | None]
    title: NotRequired[str | None]
    summary: NotRequired[str | None]
    generated_keywords: NotRequired[list[str]]
    kept_keywords: NotRequired[list[str]]
    questions: NotRequired[list[str]]
    keywords_file: NotRequired[str]
    replaced_invalid: NotRequired[str | None]
    dropped: NotRequired[list[str]]


class EnrichResult(TypedDict):
    documents: list[EnrichedDocument]
    count: int
    enriched: int
    would_enrich: int
    unchanged: int
    skipped: int
    failed: int
    methods: dict[str, int]
    dry_run: bool
    written: bool
    seconds: float
    docs_per_second: float | None
    llm: LlmReport


class SuggestionEvidence(TypedDict, total=False):
    shared_documents: int
    documents_a: int
    documents_b: int


class Suggestion(Relation):
    source: str
    evidence: NotRequired[JsonObject]


class SuggestResult(TypedDict):
    suggestions: list[Suggestion]
    count: int
    min_score: float
    by_source: dict[str, int]
    applied: int
    output: str | None
    llm: LlmReport
    learned_ids: NotRequired[list[int]]
