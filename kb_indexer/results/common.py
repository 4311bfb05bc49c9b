"""Shared parts of the API results: problems, the ``llm`` report, open-ended objects."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 12):
    from typing import NotRequired, TypedDict
else:  # pydantic (the MCP tools' schemas) reads only typing_extensions' TypedDict below Python 3.12
    from typing_extensions import NotRequired, TypedDict

__all__ = ["CacheCounts", "JsonObject", "LlmReport", "NotRequired", "Problem", "SchemaVersion", "SimilarityType",
           "TypedDict"]

JsonObject = dict[str, Any]
"""An open-ended JSON object (its keys vary with the case it reports)."""

SimilarityType = str
"""One of :data:`kb_indexer.store.similarities.SIMILARITY_TYPES`."""


class Problem(TypedDict):
    """A file a command could not use (or used with a warning), and why."""
    file: str
    message: str
    indexed: NotRequired[bool]


class LlmReport(TypedDict):
    """The ``llm`` object of every LLM-using command: which model, whether it was used, and if not why."""
    backend: str | None
    model: str | None
    used: bool
    fallback: str | None
    error: str | None
    reason: NotRequired[str | None]
    batches: NotRequired[dict[str, int]]
    documents: NotRequired[int]
    fallback_documents: NotRequired[int]
    cache: NotRequired[CacheCounts]


class CacheCounts(TypedDict):
    hits: int
    misses: int


class SchemaVersion(TypedDict):
    migrations: int
    latest: str | None
    known: int


class Relation(TypedDict):
    """A typed relation between two keywords, as ``similarities.json`` holds it."""
    keyword1: str
    keyword2: str
    type: SimilarityType
    context: str
    score: float
    directional: bool
