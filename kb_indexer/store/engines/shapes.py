"""The shapes the engines' methods take and give (imported by the engines and by :class:`Engine`'s module)."""

from __future__ import annotations

from typing import NamedTuple, Protocol

FtsRow = tuple[int, str, str, str, str]   # a full-text row: (document id, title, summary, keywords text, body)


class TextQuery(Protocol):
    """A full-text query (:mod:`kb_indexer.search.fulltext` builds them)."""

    @property
    def terms(self) -> tuple[str, ...]: ...      # plain terms, in order (a repeated term counts again)
    @property
    def match(self) -> str: ...                  # FTS5's MATCH expression of the same terms


class JsonItems(NamedTuple):
    """The pieces of SQL that read a field of each object of a JSON array held in a text column: ``source``
    (a table function to join), ``value`` (the field of one item) and ``valid`` (the rows whose text is an
    array: the others are skipped)."""

    source: str
    value: str
    valid: str
