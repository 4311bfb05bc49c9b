"""Bounded results for MCP tools: every result fits about ``BUDGET`` estimated tokens, with a cursor.

A cursor is opaque to the client: ``<offset>.<tag>.<mac>``, the offset of the next page (items of a list,
characters of a text, resources), an optional tag (the query id of a paged ``kb_query``) and an HMAC, under
a key drawn when the server starts, of both and of the *scope*: the arguments the cursor continues (the
question and options of a query, the path of a document). So a cursor passed with other arguments, edited,
or made by another server process is refused (a query's feedback is never recorded against another
question), and so is anything else: a clean ``usage`` error, never a crash.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from typing import Any

from kb_indexer.errors import UsageError
from kb_indexer.limits import MAX_ID
from kb_indexer.tokens import estimate_tokens

BUDGET = 2000
# Room left in the budget for the envelope of a result (keys, ids, the cursor).
ENVELOPE = 150
_KEY = secrets.token_bytes(32)
_CURSOR = re.compile(r"([0-9]{1,18})\.([0-9]{0,19})\.([0-9a-f]{32})")


def tokens_of(value: Any) -> int:
    return estimate_tokens(json.dumps(value, ensure_ascii=False))


def _mac(offset: int, tag: str, scope: Any) -> str:
    scoped = json.dumps([offset, tag, scope], ensure_ascii=False, separators=(",", ":"), default=str)
    return hmac.new(_KEY, scoped.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]


def make_cursor(offset: int, scope: Any = None, tag: int | None = None) -> str:
    """The cursor of the page from ``offset`` of the call with arguments ``scope`` (tag: a query id)."""
    text = "" if tag is None else str(tag)
    return f"{offset}.{text}.{_mac(offset, text, scope)}"


def parse_cursor(cursor: str | None, scope: Any = None) -> tuple[int, int | None]:
    """(offset, tag) of a cursor made by :func:`make_cursor` for this ``scope``; (0, None) for none."""
    if cursor is None or cursor == "":
        return 0, None
    found = _CURSOR.fullmatch(cursor) if isinstance(cursor, str) else None
    if found is None or not hmac.compare_digest(found[3], _mac(int(found[1]), found[2], scope)):
        raise UsageError(f"Invalid cursor {str(cursor)[:40]!r}: pass back a next_cursor of this server unchanged, "
                         "with the same arguments as the call that returned it")
    tag = int(found[2]) if found[2] else None
    if tag is not None and not 1 <= tag <= MAX_ID:
        raise UsageError(f"Invalid cursor {cursor[:40]!r}")
    return int(found[1]), tag


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
