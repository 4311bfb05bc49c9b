"""Results of the learning half of the API (history, feedback, learn)."""

from __future__ import annotations

from typing import Union

from kb_indexer.results.common import JsonObject, NotRequired, TypedDict


class HistoryEntry(TypedDict):
    query_id: int
    question: str
    context: str | None
    attempts: int
    feedback: int
    created_at: str
    last_attempted_at: str | None
    age_seconds: int | None
    age: str | None
    summary: str


class HistoryListResult(TypedDict):
    queries: list[HistoryEntry]
    count: int


class AttemptHit(TypedDict):
    filepath: str
    score: float
    matched_keywords: list[str]
    sources: list[str]


class Attempt(TypedDict):
    attempt_id: int
    keywords: list[str]
    method: str | None
    expand_depth: int | None
    threshold: float | None
    result_count: int | None
    created_at: str
    top_results: NotRequired[list[AttemptHit]]
    age_seconds: NotRequired[int | None]
    age: NotRequired[str | None]


class FeedbackRow(TypedDict):
    feedback_id: int
    filepath: str
    helpful: bool
    attempt_id: int | None
    notes: str | None
    processed: bool
    created_at: str


class HistoryDetailResult(TypedDict):
    query_id: int
    question: str
    context: str | None
    created_at: str
    last_attempted_at: str | None
    age_seconds: int | None
    age: str | None
    summary: str
    attempts: list[Attempt]
    feedback: list[FeedbackRow]


HistoryResult = Union[HistoryListResult, HistoryDetailResult]
"""``history``: the list, or with a query id that query's detail."""


class RecordedFeedback(TypedDict):
    filepath: str
    helpful: bool
    attempt_id: int | None


class FeedbackResult(TypedDict):
    query_id: int
    recorded: list[RecordedFeedback]
    count: int
    not_in_results: NotRequired[list[str]]   # marked files the attempt did not return (recorded all the same)


class FeedbackShowResult(TypedDict):
    query_id: int
    question: str
    feedback: list[FeedbackRow]
    count: int


class LearnSuggestion(TypedDict, total=False):
    """One thing ``learn`` found; its keys depend on ``kind`` (association, keyword, similarity, score)."""
    kind: str
    key: str
    filepath: str
    terms: list[str]
    keyword: str
    keyword1: str
    keyword2: str
    type: str
    score: float
    similarity_id: int
    delta: float
    weight: float
    evidence: int
    against: int
    helpful: int
    not_helpful: int
    feedback_ids: list[int]
    reason: str
    action: str
    section: str
    description: str


class LearnResult(TypedDict):
    feedback_analyzed: int
    feedback_total: int
    dry_run: bool
    queries: int
    suggestions: list[LearnSuggestion]
    applied: int
    marked_processed: int
    summary: dict[str, int]
    sections: dict[str, int]


class LearnedItem(TypedDict):
    id: int
    kind: str
    status: str
    key: str
    weight: float | None
    summary: str            # what it does, in a person's words (the table shows it)
    questions: list[str]    # the recorded questions behind it, as asked (at most 3; none after clear-history)
    reason: str | None
    detail: JsonObject
    feedback_ids: list[int]
    updated_at: str


class LearnedListResult(TypedDict):
    learned: list[LearnedItem]
    count: int


class LearnedRemoveResult(TypedDict):
    removed: list[int]
    count: int
    already_removed: list[int]   # ids given that an earlier `learned remove` undid (nothing to do)


class ClearHistoryResult(TypedDict):
    queries_removed: int
    feedback_removed: int
    before: str | None


class ReportQuestion(TypedDict):
    question: str
    attempts: int
    last_asked: str


class ReportQuestions(TypedDict):
    count: int
    items: list[ReportQuestion]


class FeedbackRate(TypedDict):
    questions: int
    marked: int
    helpful: int
    marked_share: float | None
    helpful_share: float | None


class FeedbackRates(TypedDict):
    overall: FeedbackRate


class NeverReturned(TypedDict):
    count: int
    items: list[str]
    top_results_recorded: int
    note: str


class ReportResult(TypedDict):
    since: str | None
    limit: int
    zero_results: ReportQuestions
    never_helpful: ReportQuestions
    most_asked: ReportQuestions
    feedback_rate: FeedbackRates
    never_returned: NeverReturned
