"""Cutting what is kept verbatim so a context fits its window: the last resort of compression.

When a context is still over its window after compression (a few huge messages in the verbatim tail, a
huge latest user message or system message, a huge active skill), each text that alone exceeds its
share is cut. The share is the same for all (``share``: the largest cap such that the texts, each
counted at most at the cap, fit the budget), so shorter texts are kept whole and only the longest are
cut, to the same size. A cut text keeps its start (two thirds of the room) and its end (one third: a
pasted log's question is often at its end), with a mark saying how many characters were cut between.
``cut_chars`` does the same to a limit in characters (the chat context block's cap).
"""

from __future__ import annotations

from kb_indexer.tokens import estimate_tokens

CUT_MARK = "\n[… {n:,} characters cut to fit the context window; kbindex …]\n"
HEAD_SHARE = 2 / 3


def prefix_within(text: str, max_tokens: int) -> int:
    """Length of the longest prefix of ``text`` estimated at most ``max_tokens`` (0 if none)."""
    text = text[:4 * max_tokens + 4]   # each character costs at least a quarter token
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return low


def cut_text(text: str, max_tokens: int) -> str:
    """``text`` if it is estimated at most ``max_tokens``, else its start and end with the cut marked
    between them, estimated at most ``max_tokens`` (just the mark, or nothing, when even that is more)."""
    if estimate_tokens(text) <= max_tokens:
        return text
    mark_tokens = estimate_tokens(CUT_MARK.format(n=len(text)))
    room = max_tokens - mark_tokens
    if room <= 0:
        mark = CUT_MARK.format(n=len(text)).strip()
        return mark if estimate_tokens(mark) <= max_tokens else ""
    head = prefix_within(text, int(room * HEAD_SHARE))
    room -= estimate_tokens(text[:head])
    rest = text[head:]
    tail = prefix_within(rest[max(0, len(rest) - 4 * room - 4):][::-1], room) if room > 0 else 0
    end = len(text) - tail
    return text[:head] + CUT_MARK.format(n=end - head) + text[end:]


def cut_chars(text: str, limit: int) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and end with the cut marked between
    them, at most ``limit`` characters (a plain prefix when the mark does not fit)."""
    if len(text) <= limit:
        return text
    room = limit - len(CUT_MARK.format(n=len(text)))
    if room <= 0:
        return text[:limit]
    head = int(room * HEAD_SHARE)
    end = len(text) - (room - head)
    return text[:head] + CUT_MARK.format(n=end - head) + text[end:]


def share(sizes: list[int], budget: int) -> int:
    """The largest cap such that ``sum(min(size, cap))`` is at most ``budget`` (0 if none; at least the
    largest size when all fit)."""
    if sum(sizes) <= budget:
        return max(sizes, default=0)
    low, high = 0, max(sizes)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(s, mid) for s in sizes) <= budget:
            low = mid
        else:
            high = mid - 1
    return low
