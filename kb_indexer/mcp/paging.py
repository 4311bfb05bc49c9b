"""Bounded results for MCP tools: every result fits about ``BUDGET`` estimated tokens, with a cursor.

Cursors are opaque strings to the client; here they are plain offsets (items of a list, characters of
a text), optionally with a ``:``-separated tag (the query id of a paged ``kb_query``).
"""

from __future__ import annotations

import json
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.tokens import estimate_tokens

BUDGET = 2000
# Room left in the budget for the envelope of a result (keys, ids, the cursor).
ENVELOPE = 150


def tokens_of(value: Any) -> int:
    return estimate_tokens(json.dumps(value, ensure_ascii=False))


def parse_cursor(cursor: str | None) -> tuple[int, str | None]:
    """(offset, tag) of a cursor; (0, None) for none. A cursor not made here is bad usage."""
    if cursor is None or cursor == "":
        return 0, None
    head, _, tag = str(cursor).partition(":")
    if not head.isdigit():
        raise UsageError(f"Invalid cursor: {cursor!r} (pass back a next_cursor unchanged)")
    return int(head), (tag or None)


def make_cursor(offset: int, tag: Any = None) -> str:
    return f"{offset}:{tag}" if tag is not None else str(offset)


def page_items(items: list[Any], offset: int, budget: int | None = None) -> tuple[list[Any], int | None]:
    """The items from ``offset`` that fit ``budget`` tokens (default: the result budget less its envelope;
    at least one item), and the next offset (None: done)."""
    budget = BUDGET - ENVELOPE if budget is None else budget
    page: list[Any] = []
    used = 0
    for i in range(offset, len(items)):
        cost = tokens_of(items[i])
        if page and used + cost > budget:
            return page, i
        page.append(items[i])
        used += cost
    return page, None


def page_text(text: str, offset: int, budget: int | None = None) -> tuple[str, int | None]:
    """The slice of ``text`` from ``offset`` within ``budget`` tokens, cut at a line or word end when one is
    near, and the next offset (None: the end)."""
    budget = BUDGET - ENVELOPE if budget is None else budget
    if offset > len(text):
        raise UsageError(f"cursor {offset} is past the end of the text ({len(text)} characters)")
    end = min(len(text), offset + budget * 4)
    while end > offset and estimate_tokens(text[offset:end]) > budget:
        end = offset + (end - offset) * 9 // 10
    if end < len(text):
        cut = max(text.rfind("\n", offset, end), text.rfind(" ", offset, end))
        if cut > offset + (end - offset) // 2:
            end = cut + 1
    return text[offset:end], (end if end < len(text) else None)


def clip(text: Any, chars: int) -> Any:
    if isinstance(text, str) and len(text) > chars:
        return text[: chars - 1] + "…"
    return text
