"""Results of opening, indexing, documents, keywords, similarities, the LLM cache, doctor and the
database."""

from __future__ import annotations

from typing import Any, Literal, Union

from kb_indexer.results.common import (
    CacheCounts, JsonObject, LlmReport, NotRequired, Problem, Relation, SchemaVersion, SimilarityType, TypedDict,
)
from kb_indexer.results.enrich import EnrichResult


class InitResult(TypedDict):
    db: str
    kb_root: str
    created: bool
    migrations_applied: list[str]
    kb_root_exists: bool


class DocumentResult(TypedDict):
    """``add`` and ``update``: ``action`` added, updated, or unchanged (the index held it as read)."""
    action: str
    filepath: str
    title: str | None
    keywords: int
    keywords_file: str | None
    warnings: list[str]
    errors: list[str]


class RemoveResult(TypedDict):
    action: Literal["removed"]
    filepath: str


Rename = TypedDict("Rename", {"from": str, "to": str, "similarity": NotRequired[float]})


class SimilarityFilesReport(TypedDict):
    files: int
    imported: int
    unchanged_files: int
    removed: int


class SparseRefresh(TypedDict):
    built: bool
    documents: int
    folded: int
    segments: NotRequired[int]
    merged: NotRequired[Any]
    seconds: NotRequired[float]


class EmbedResult(TypedDict):
    backend: str
    model: str
    encoder: str | None     # what computed the vectors in this process (local: numpy or sentence-transformers)
    dim: int | None
    documents: int
    embedded: int
    unchanged: int
    chunks: int
    requests: int
    truncated: int
    truncated_files: list[str]
    seconds: float
    coverage: EmbeddingCoverage


class EmbedError(TypedDict):
    """A sync's ``embed`` object when embedding failed (the sync itself stays)."""
    error: str
    code: str
    details: JsonObject | None


class SyncResult(TypedDict):
    added: int
    updated: int
    removed: int
    renamed: int
    unchanged: int
    errors: list[Problem]
    warnings: list[Problem]
    batches: int
    renames: NotRequired[list[Rename]]
    similarities: NotRequired[SimilarityFilesReport]
    fulltext_index: NotRequired[SparseRefresh]
    embed: NotRequired[Union[EmbedResult, EmbedError]]
    enrich: NotRequired[EnrichResult]


class DocumentSummary(TypedDict):
    filepath: str
    title: str | None
    summary: str | None
    updated_at: str
    keyword_count: int


class ListDocsResult(TypedDict):
    documents: list[DocumentSummary]
    count: int


class DocumentText(TypedDict):
    """A slice of a document's indexed text (``KnowledgeBase.read``): ``text`` is
    ``[offset, offset + len(text))`` of ``total_chars`` characters; ``more``: text follows the slice."""
    filepath: str
    title: str | None
    text: str
    offset: int
    total_chars: int
    more: bool


class KeywordTag(TypedDict):
    keyword: str
    category: str | None


class DocumentKeyword(TypedDict):
    keyword: str
    category: str | None
    source: str


class ShowResult(TypedDict):
    filepath: str
    title: str | None
    summary: str | None
    keywords: list[KeywordTag]
    keywords_file: str | None
    created_at: str
    updated_at: str


class KeywordsResult(TypedDict):
    filepath: str
    keywords: list[DocumentKeyword]
    count: int


class StaleNote(TypedDict):
    """What ``query`` says of an index out of date (``KnowledgeBase.stale_note``; the CLI's JSON ``stale``)."""
    message: str
    checked: bool          # false: the files are not on this machine (a shared index), nothing was compared
    changed: int
    added: int
    removed: int


class StaleResult(TypedDict):
    stale: bool
    checked: bool
    seconds: float
    reason: NotRequired[str]
    added: NotRequired[int]
    removed: NotRequired[int]
    changed: NotRequired[int]
    similarities_changed: NotRequired[list[str]]
    examples: NotRequired[list[str]]
    mode: NotRequired[Literal["full", "quick"]]
    files: NotRequired[int]
    folders: NotRequired[int]
    folders_listed: NotRequired[int]
    folders_compared: NotRequired[int]
    recent_checked: NotRequired[int]


class TaggedDocument(TypedDict):
    filepath: str
    title: str | None
    summary: str | None
    category: str | None
    source: str


class KeywordDocsResult(TypedDict):
    """``docs KEYWORD``."""
    keyword: str
    documents: list[TaggedDocument]
    count: int


class KeywordStatsResult(TypedDict):
    keyword: str
    normalized: str
    category: str | None
    document_count: int
    related_keywords_count: int
    similarities_by_type: dict[str, int]


class SimilarKeyword(TypedDict):
    keyword: str
    similarity_type: SimilarityType
    context: str | None
    score: float
    directional: bool
    direction: str | None
    context_match_score: NotRequired[float]


class SimilarResult(TypedDict):
    keyword: str
    similar_keywords: list[SimilarKeyword]
    count: int   # the relations shown (at most the limit)
    total: int   # every relation of the keyword (with a user context: every one that fits it)
    user_context: NotRequired[str]
    llm: NotRequired[LlmReport]
    cache: NotRequired[CacheCounts]


class RelateResult(Relation):
    action: Literal["created", "updated", "held_for_review"]
    id: int | None                  # None while held for review
    learned_id: NotRequired[int]    # held for review: the pending item (`kbindex learned approve ID`)


class UnrelateResult(TypedDict):
    action: Literal["removed", "held_for_review"]
    learned_id: NotRequired[int]    # held for review: the pending item
    keyword1: str
    keyword2: str
    type: SimilarityType | None
    removed: int


class ImportSimilaritiesResult(TypedDict):
    file: str
    imported: int
    created: int
    updated: int


class ExportSimilaritiesResult(TypedDict):
    """The ``similarities.json`` format (relations as a person keeps them)."""
    similarities: list[JsonObject]


class CacheGroup(TypedDict):
    task: str
    backend: str
    model: str
    entries: int
    hits: int
    last_used: str | None


class CacheStatsResult(TypedDict):
    entries: int
    hits: int
    bytes: int
    by_task: list[CacheGroup]
    oldest: str | None
    newest: str | None


class CacheClearResult(TypedDict):
    removed: int
    task: str | None
    backend: str | None
    model: str | None


class DoctorDatabase(TypedDict):
    path: str
    exists: bool | None     # None: a server that could not be reached (whether it holds the index is not known)
    schema: SchemaVersion | None
    up_to_date: bool | None
    kb_root: str | None
    llm_cache_entries: int | None
    vector_search: NotRequired[VectorSearch]
    error: str | None


class LocalModelStatus(TypedDict):
    """An OpenAI-compatible server on the ``openai`` backend's URL (``kbindex model serve`` starts one)."""
    url: str
    running: bool
    models: list[str]
    error: NotRequired[str]
    hint: NotRequired[str]


class DoctorEmbedding(TypedDict):
    """The embedding backend and model ``embed`` and ``query`` use, and (``local``) what would compute it."""
    backend: str
    model: str | None
    sources: dict[str, str]
    encoder: str | None     # local: "numpy" or "sentence-transformers"; None: a server's, or none can run
    error: str | None       # why the model cannot be used here
    path: NotRequired[str | None]   # local: the model's folder


class DoctorResult(TypedDict):
    version: str
    llm: JsonObject
    local_model: LocalModelStatus
    embedding: DoctorEmbedding
    database: DoctorDatabase
    problems: list[str]
    ok: bool


class EmbeddingCoverage(TypedDict):
    backend: str
    model: str
    dim: int
    documents: int
    with_vectors: int
    without_vectors: int
    stale: int
    chunks: int
    coverage: float
    updated_at: str


class VectorSearch(TypedDict):
    """How semantic search finds the nearest vectors: ``numpy`` (the model's matrix read into the process)
    or ``pgvector`` (an HNSW index on the PostgreSQL server); ``note`` says why not pgvector on a server."""
    engine: str
    pgvector: str | None
    index: str | None
    note: str | None


class SparseIndexStats(TypedDict):
    documents: int
    tokens: int
    segments: int
    postings: int
    pending_documents: int
    updated_at: str


class DbStatsResult(TypedDict):
    documents: int
    keywords: int
    document_keywords: int
    similarities: int
    similarities_by_type: dict[str, int]
    queries: int
    query_attempts: int
    feedback: int
    embeddings: list[EmbeddingCoverage]
    vector_search: VectorSearch
    fulltext_index: SparseIndexStats | None
    db: str
    kb_root: str
    schema: SchemaVersion


class ExportResult(TypedDict):
    """``export``: every table's rows (the format ``import`` reads back)."""
    format: str
    format_version: int
    kbindex_version: str
    migrations: list[str]
    tables: dict[str, list[JsonObject]]


class ImportResult(TypedDict):
    imported: dict[str, int]
