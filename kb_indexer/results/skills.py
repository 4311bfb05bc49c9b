"""Results of the skills half of the API."""

from __future__ import annotations

from typing import Literal

from kb_indexer.results.common import JsonObject, NotRequired, Problem, TypedDict


class DuplicateSkill(TypedDict):
    name: str
    kept: str
    skipped: str


class SkillsSyncResult(TypedDict):
    dirs: list[str]
    forgotten: list[str]
    added: list[str]
    updated: list[str]
    removed: list[str]
    unchanged: int
    skills: int
    duplicates: list[DuplicateSkill]
    errors: list[Problem]


class SkillSummary(TypedDict):
    name: str
    description: str
    folder: str
    source_dir: str
    updated_at: str


class SkillsDir(TypedDict):
    path: str
    added_at: str
    synced_at: str | None


class SkillsListResult(TypedDict):
    skills: list[SkillSummary]
    count: int
    dirs: list[SkillsDir]
    env_dirs: list[str]


class SkillShowResult(TypedDict):
    name: str
    description: str
    metadata: JsonObject
    body: str
    folder: str
    file: str
    source_dir: str
    content_hash: str
    created_at: str
    updated_at: str


class SkillRemoveResult(TypedDict):
    action: Literal["removed"]
    name: str
    folder: str


class SkillCandidate(TypedDict):
    name: str
    description: str
    score: float


class MatchedSkill(TypedDict):
    name: str
    description: str
    score: float
    source: Literal["keyword", "llm", "vectors", "keyword+vectors"]
    reason: str


class SessionSkill(TypedDict):
    """A skill of a match session: its priority, how often and when last matched, whether loaded."""
    name: str
    priority: Literal["active", "relevant"]
    match_count: int
    last_matched_turn: int
    loaded: bool


class SessionTurn(TypedDict):
    """A match's ``session`` object: the turn and what it loaded and evicted."""
    id: str
    turn: int
    loaded: list[str]
    newly_loaded: list[str]
    evicted: list[str]
    skills: list[SessionSkill]
    evict_after: int
    max_loaded: int


class SkillsLlmReport(TypedDict):
    called: bool
    reason: NotRequired[str]
    backend: NotRequired[str | None]
    model: NotRequired[str | None]
    dropped: NotRequired[list[str]]


class SkillVectorsReport(TypedDict):
    """A match's semantic channel: whether it ran (``fallback``: why not), the best and next cosine."""
    used: bool
    fallback: str | None
    backend: NotRequired[str]
    model: NotRequired[str]
    skills: NotRequired[int]
    min_cosine: NotRequired[float]
    margin: NotRequired[float]
    best: NotRequired[float]
    best_skill: NotRequired[str]
    next: NotRequired[float]
    min_keyword_cosine: NotRequired[float]
    keyword: NotRequired[list[JsonObject]]
    vetoed: NotRequired[list[str]]
    neighbour_cosine: NotRequired[float]
    neighbour_min_cosine: NotRequired[float]
    neighbours: NotRequired[list[str]]


class SkillsEmbedResult(TypedDict):
    backend: str
    model: str
    dim: int
    skills: int
    embedded: int
    unchanged: int
    removed: int
    seconds: float


class SkillMatchResult(TypedDict):
    query: str
    terms: list[str]
    matched: list[MatchedSkill]
    method: Literal["keyword", "llm", "keyword+vectors"]
    candidates: list[SkillCandidate]
    min_score: float
    background: float
    top: int
    skills: int
    cache: dict[str, bool]
    fallback_reason: str | None
    prompt_tokens_estimate: int | None
    llm: SkillsLlmReport | None
    vectors: SkillVectorsReport
    session: SessionTurn | None
    elapsed_ms: float


class SessionMessage(TypedDict):
    turn: int
    message: str


class SkillSessionResult(TypedDict):
    id: str
    turn: int
    created_at: str
    updated_at: str
    loaded: list[str]
    skills: list[SessionSkill]
    messages: list[SessionMessage]


class SkillSessionResetResult(TypedDict):
    action: Literal["reset"]
    id: str
    existed: bool


class LoadedSkill(SessionSkill):
    description: str
    body: str
    tokens: int
    markdown: str


class LeftOutSkill(TypedDict):
    name: str
    reason: str
    tokens: NotRequired[int]


class SkillsLoadResult(TypedDict):
    id: str
    turn: int
    budget: int | None
    tokens: int
    skills: list[LoadedSkill]
    left_out: list[LeftOutSkill]
    markdown: str
