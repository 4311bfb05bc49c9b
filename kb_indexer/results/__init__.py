"""The typed results of the Python API (:class:`kb_indexer.api.KnowledgeBase` and its feature halves) and of
the MCP tools, in one place.

Every API method returns plain JSON-ready data; these TypedDicts say its shape (a key a result may leave
out is ``NotRequired``; a value that may be null is ``X | None``). The MCP tools' output schemas are
derived from the ``Mcp*`` types (:func:`kb_indexer.mcp.outputs.output_schema`), so the schema a client
reads and the data a tool returns cannot drift apart.

Outside the MCP path, import this module for annotations only (``if TYPE_CHECKING:``): below Python 3.12
it imports ``typing_extensions`` (about 5 ms of a cold ``kbindex search``), whose TypedDict pydantic needs
there to read the MCP types.

Where a part of a result is open-ended (rows of a table in ``export``, per-stage details of
``context compress``, diagnostics), it is :data:`JsonObject`.
"""

from __future__ import annotations

from kb_indexer.results.common import CacheCounts, JsonObject, LlmReport, Problem, SchemaVersion, SimilarityType
from kb_indexer.results.index import (
    CacheClearResult, CacheGroup, CacheStatsResult, DbStatsResult, DoctorDatabase, DoctorEmbedding, DoctorResult, LocalModelStatus,
    DocumentKeyword, DocumentResult, DocumentSummary, DocumentText, EmbedError, EmbedResult, EmbeddingCoverage, ExportResult,
    ExportSimilaritiesResult, ImportResult, ImportSimilaritiesResult, InitResult, KeywordDocsResult,
    KeywordStatsResult, KeywordTag, KeywordsResult, ListDocsResult, RelateResult, RemoveResult, Rename,
    ShowResult, SimilarKeyword, SimilarResult, SimilarityFilesReport, SparseIndexStats, SparseRefresh, VectorSearch,
    StaleNote, StaleResult, SyncResult, TaggedDocument, UnrelateResult,
)
from kb_indexer.results.query import (
    Evidence, Expansion, QueryEcho, QueryResult, RankedDocument, ScoreParts, SearchHit, SearchQuery,
    SearchResult, SemanticReport,
)
from kb_indexer.results.rules import (
    HiddenByRule, RuleNote, RuleRemoveResult, RuleResult, RulesListResult, SearchRule,
)
from kb_indexer.results.learning import (
    Attempt, AttemptHit, ClearHistoryResult, FeedbackResult, FeedbackRow, FeedbackShowResult,
    HistoryDetailResult, HistoryEntry, HistoryListResult, HistoryResult, LearnResult, LearnSuggestion,
    LearnedItem, LearnedListResult, LearnedRemoveResult, LearningPolicy, RecordedFeedback, RemoveAskerResult,
    ReviewResult, RelationSuggestion, SuggestionsResult, AcceptedSuggestion, SuggestionsAcceptResult,
    SuggestionsDismissResult, AskerFeedbackRate, FeedbackRate, FeedbackRates, NeverReturned, ReportQuestion,
    ReportQuestions, ReportResult,
)
from kb_indexer.results.skills import (
    DuplicateSkill, LeftOutSkill, LoadedSkill, MatchedSkill, SessionMessage, SessionSkill, SessionTurn,
    SkillCandidate, SkillMatchResult, SkillRemoveResult, SkillSessionResetResult, SkillSessionResult,
    SkillShowResult, SkillSummary, SkillVectorsReport, SkillsDir, SkillsEmbedResult, SkillsListResult,
    SkillsLlmReport, SkillsLoadResult, SkillsSyncResult,
)
from kb_indexer.results.context import (
    AddedMessage, BuildStats, CompressStats, ContextAddResult, ContextBuildResult, ContextCompressResult,
    ContextResetResult, ContextSession, ContextSessionsResult, ContextShowResult, MessageText, RecordedMessage,
    SessionSummary, StoredMessage,
)
from kb_indexer.results.evaluate import EvalConfig, EvalJudgements, EvalQuestion, EvalResult
from kb_indexer.results.enrich import EnrichResult, EnrichedDocument, SuggestResult, Suggestion, SuggestionEvidence
from kb_indexer.results.mcp import (
    McpDocumentResult, McpFeedbackResult, McpQueryResult, McpSimilarResult, McpSkillsResult, QueryHit, Related,
    Skill,
)

__all__ = [
    "HiddenByRule", "RuleNote", "RuleRemoveResult", "RuleResult", "RulesListResult", "SearchRule",
    "AskerFeedbackRate", "FeedbackRate", "FeedbackRates", "NeverReturned", "ReportQuestion", "ReportQuestions",
    "ReportResult",
    "AddedMessage", "Attempt", "AttemptHit", "BuildStats", "CacheClearResult", "CacheCounts", "CacheGroup",
    "CacheStatsResult", "ClearHistoryResult", "CompressStats", "ContextAddResult", "ContextBuildResult",
    "ContextCompressResult", "ContextResetResult", "ContextSession", "ContextSessionsResult",
    "ContextShowResult", "DbStatsResult", "DoctorDatabase", "DoctorEmbedding", "DoctorResult", "LocalModelStatus", "DocumentKeyword", "DocumentResult",
    "DocumentSummary", "DuplicateSkill", "EmbedError", "EmbedResult", "EmbeddingCoverage", "EnrichResult",
    "EnrichedDocument", "EvalConfig", "EvalJudgements", "EvalQuestion", "EvalResult", "Evidence", "Expansion",
    "ExportResult", "ExportSimilaritiesResult", "FeedbackResult",
    "FeedbackRow", "FeedbackShowResult", "HistoryDetailResult", "HistoryEntry", "HistoryListResult",
    "HistoryResult", "ImportResult", "ImportSimilaritiesResult", "InitResult", "JsonObject",
    "KeywordDocsResult", "KeywordStatsResult", "KeywordTag", "KeywordsResult", "LearnResult", "LearnSuggestion",
    "LearnedItem", "LearnedListResult", "LearnedRemoveResult", "LearningPolicy", "RemoveAskerResult", "ReviewResult",
    "RelationSuggestion", "SuggestionsResult", "AcceptedSuggestion", "SuggestionsAcceptResult",
    "SuggestionsDismissResult", "LeftOutSkill", "ListDocsResult", "DocumentText", "LlmReport",
    "LoadedSkill", "MatchedSkill", "McpDocumentResult", "McpFeedbackResult", "McpQueryResult",
    "McpSimilarResult", "McpSkillsResult", "MessageText", "Problem", "QueryEcho", "QueryHit", "QueryResult",
    "RankedDocument", "RecordedFeedback", "RecordedMessage", "RelateResult", "Related", "RemoveResult",
    "Rename", "SchemaVersion", "ScoreParts", "SearchHit", "SearchQuery", "SearchResult", "SemanticReport",
    "SessionMessage", "SessionSkill", "SessionSummary", "SessionTurn", "ShowResult", "SimilarKeyword",
    "SimilarResult", "SimilarityFilesReport", "SimilarityType", "Skill", "SkillCandidate", "SkillMatchResult",
    "SkillRemoveResult", "SkillSessionResetResult", "SkillSessionResult", "SkillShowResult", "SkillSummary",
    "SkillVectorsReport", "SkillsDir", "SkillsEmbedResult", "SkillsListResult", "SkillsLlmReport",
    "SkillsLoadResult", "SkillsSyncResult",
    "SparseIndexStats", "SparseRefresh", "VectorSearch", "StaleNote", "StaleResult", "StoredMessage", "SuggestResult", "Suggestion",
    "SuggestionEvidence", "SyncResult", "TaggedDocument", "UnrelateResult",
]
