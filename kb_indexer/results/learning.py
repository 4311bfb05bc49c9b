"""Results of the learning half of the API (history, feedback, learn)."""

from __future__ import annotations

from typing import Union

from kb_indexer.results.common import JsonObject, NotRequired, TypedDict


class HistoryEntry(TypedDict):
    query_id: int
    question: str
    context: str | None
    asker: str              # who first asked it (kb_indexer.store.team; 'unknown' for rows of an older kbindex)
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
    asker: str
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
    asker: str              # whose mark (marks are kept per asker)
    attempt_id: int | None
    notes: str | None
    processed: bool
    excluded: bool          # no longer counted by learning
    created_at: str


class HistoryDetailResult(TypedDict):
    query_id: int
    question: str
    context: str | None
    asker: str
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
    mode: str               # the learning policy's mode the run obeyed: auto or review
    held_for_review: int    # items recorded as pending (review mode): they change no ranking until approved
    below_policy: int       # items the feedback suggests that too few distinct askers support: not learned
    changes: NotRequired[list[JsonObject]]   # dry run: per affected recorded question, top results before/after


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
    askers: list[str]       # whose feedback it rests on (of feedback_ids still recorded)
    updated_at: str
    removed_by: str | None   # who removed it (`learned remove`), and when
    removed_at: str | None
    decided_by: str | None   # who approved or rejected it (review queue), and when
    decided_at: str | None


class LearnedListResult(TypedDict):
    learned: list[LearnedItem]
    count: int


class LearnedRemoveResult(TypedDict):
    removed: list[int]
    count: int
    already_removed: list[int]   # ids given that an earlier `learned remove` undid (nothing to do)


class RemoveAskerResult(TypedDict):
    asker: str
    feedback_excluded: int        # their marks, kept and marked excluded (learn no longer reads them)
    withdrawn: int                # learned items that rested only on their marks: undone
    relearned: int                # items others support too: learned again from the others' marks
    changes: list[LearnSuggestion]


class LearningPolicy(TypedDict):
    mode: str          # auto: learn applies what it learns; review: it is held as pending until approved
    min_askers: int    # distinct askers an item needs
    max_share: float   # the largest share of an item's evidence one asker may have


class ReviewResult(TypedDict, total=False):
    """``approve``, ``reject`` or ``restore``: the ids done (under that verb's name), their count, and the ids
    given that were not in the state the verb needs (not_pending, not_removed: nothing done to them)."""
    approved: list[int]
    rejected: list[int]
    restored: list[int]
    count: int
    not_pending: list[int]
    not_removed: list[int]


class RelationSuggestion(TypedDict):
    """A typed relation the query log suggests (``learned suggestions``; :mod:`kb_indexer.learn.suggest`)."""
    key: str                # stable: from the two keywords only (accept or dismiss it by this key)
    keyword1: str           # for an abbreviation, the short form
    keyword2: str
    type: str               # abbreviation, synonym or related_concept
    score: float            # the score the relation gets when accepted
    queries: int            # how many recorded queries support it
    query_ids: list[int]
    questions: list[str]    # the questions behind it, as asked (at most 3)
    askers: list[str]       # whose helpful marks it rests on
    sources: list[str]      # refine (a refine chain), co_helpful (questions helped by the same document)
    reason: str


class SuggestionsResult(TypedDict):
    suggestions: list[RelationSuggestion]
    count: int
    total: int              # every suggestion, the limit aside
    min_queries: int        # the support a suggestion needs: queries, and distinct askers (the learning policy)
    min_askers: int


class AcceptedSuggestion(TypedDict):
    key: str
    id: int                 # the relation written (as `relate` writes it)
    keyword1: str
    keyword2: str
    type: str
    score: float
    context: str


class SuggestionsAcceptResult(TypedDict):
    accepted: list[AcceptedSuggestion]
    count: int
    not_suggested: list[str]   # keys given that are not suggested now (nothing done)


class SuggestionsDismissResult(TypedDict):
    dismissed: list[str]
    count: int
    not_suggested: list[str]


class ClearHistoryResult(TypedDict):
    queries_removed: int
    feedback_removed: int
    before: str | None
    asker: NotRequired[str]   # a member's clear-history: only this asker's history was deleted


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


class AskerFeedbackRate(FeedbackRate):
    asker: str


class FeedbackRates(TypedDict):
    overall: FeedbackRate
    askers: int   # how many askers asked in the period (by_asker lists at most the report's limit)
    by_asker: list[AskerFeedbackRate]   # most questions first


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
