"""Results of the context half of the API."""

from __future__ import annotations

from typing import Literal

from kb_indexer.results.common import JsonObject, LlmReport, TypedDict


class AddedMessage(TypedDict):
    seq: int
    role: str
    is_question: bool
    normalised: str


class ContextAddResult(TypedDict):
    session: str
    added: list[AddedMessage]
    messages: int


class SessionSummary(TypedDict):
    text: str
    source: str | None
    covers_through: int | None
    updated_at: str | None


class MessageText(TypedDict):
    original: str
    normalised: str


class BuildStats(TypedDict):
    session_messages: int
    recent_used: int
    recent_limit: int
    current_recorded: bool
    summary_refresh: JsonObject
    dropped_recent: int
    summary_cut: bool
    question_cut: bool
    message_cut: bool           # the current message was cut (start and end kept) to fit max_chars
    prompt_chars: int
    over_max_chars: bool
    prompt_tokens_estimate: int
    max_chars: int


class RecordedMessage(TypedDict, total=False):
    """``{"seq": None, "already": True}`` when the message was recorded before the build, else the
    added message."""
    seq: int | None
    already: bool
    role: str
    is_question: bool
    normalised: str


class ContextBuildResult(TypedDict):
    session: str
    summary: SessionSummary | None
    recent_user_messages: list[str]
    last_assistant_question: str | None
    message: MessageText
    prompt: str
    stats: BuildStats
    recorded: RecordedMessage | None


class StoredMessage(TypedDict):
    seq: int
    role: str
    content: str
    normalised: str
    is_question: bool
    created_at: str


class ContextShowResult(TypedDict):
    session: str
    created_at: str
    updated_at: str
    summary: SessionSummary | None
    messages: list[StoredMessage]
    count: int


class ContextResetResult(TypedDict):
    action: Literal["reset"]
    session: str
    existed: bool
    messages_removed: int


class ContextSession(TypedDict):
    session: str
    messages: int
    user_messages: int
    has_summary: bool
    created_at: str
    updated_at: str


class ContextSessionsResult(TypedDict):
    sessions: list[ContextSession]
    count: int


class CompressStats(TypedDict):
    tokens_before: int
    tokens_after: int
    ratio: float
    window: int
    usage_before: float
    usage_after: float
    level: int
    stages: list[JsonObject]
    llm_calls: int
    llm_failures: int
    cache_hits: int
    fallback: str | None
    dropped_skills: list[str]
    over_window: bool
    cut_messages: list[int]     # indexes in ``messages`` of the texts cut to fit the window (stage cut_to_window)
    cut_skills: list[str]       # names of the skills whose content was cut to fit it
    token_counts: list[JsonObject]
    estimator: str
    window_source: str


class ContextCompressResult(TypedDict):
    """The input compressed: chat messages (``role``, ``content``, ...) and skills as given."""
    messages: list[JsonObject]
    skills: list[JsonObject]
    stats: CompressStats
    llm: LlmReport | None
