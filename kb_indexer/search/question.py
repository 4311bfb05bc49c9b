"""What a query asks: a question, or keywords (checked before anything is searched or recorded).

A module of its own, light to import, so the API and the CLI can check a request up front.
"""

from __future__ import annotations

from typing import Iterable

from kb_indexer.errors import UsageError
from kb_indexer.limits import MAX_QUERY_CHARS, MAX_QUERY_KEYWORDS
from kb_indexer.text import is_blank, normalize_keyword


def dedupe_keywords(values: Iterable[str]) -> list[tuple[str, str]]:
    """``(as given, normalised)`` per distinct non-empty keyword, in order."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for v in values:
        norm = normalize_keyword(str(v))
        if norm and norm not in seen:
            seen.add(norm)
            out.append((str(v).strip(), norm))
    return out


def check_question(question: object, keywords: Iterable[str] | None) -> None:
    """A query asks something: a question with a non-blank character, or at least one non-blank keyword.
    Else it is bad usage, refused before anything is searched or recorded in the history, as are a question
    over ``MAX_QUERY_CHARS`` characters and more than ``MAX_QUERY_KEYWORDS`` keywords (a NUL is searched as text:
    tests/search/test_text_with_a_nul_character_is_searched_and_recorded.py)."""
    if isinstance(question, str) and len(question) > MAX_QUERY_CHARS:
        raise UsageError(f"the question is {len(question):,} characters long; at most {MAX_QUERY_CHARS:,} are "
                         "allowed (ask a question; kbindex add indexes a document)")
    if isinstance(keywords, (list, tuple)) and len(keywords) > MAX_QUERY_KEYWORDS:
        raise UsageError(f"{len(keywords):,} keywords; a query takes at most {MAX_QUERY_KEYWORDS}")
    blank = [k for k in keywords or [] if isinstance(k, str) and is_blank(k)]
    if blank:
        raise UsageError(f"a keyword is empty ({blank[0]!r}): give words, or leave --keywords out")
    if isinstance(question, str) and not is_blank(question):
        return
    if dedupe_keywords(keywords or []):
        return
    raise UsageError("the question is empty: give a question (\"how does AlphaGo work?\") or keywords")
