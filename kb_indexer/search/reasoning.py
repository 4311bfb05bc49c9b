"""The design's per-result ``source`` and ``reasoning``, and the query's ``keyword_search_count`` /
``grep_search_count``, all derived from a result's provenance (its ``sources`` and evidence).

The one rule for ``source`` (:func:`design_source`): a document found through the index's keyword data
-- a tag equal to a user keyword (``keyword``), a tag reached by similarity expansion (``expansion``),
a learned question->document association (``learned``) or a pin rule, a curated one (``rule``:
:mod:`kb_indexer.search.rules`) -- is a ``keyword_search`` result; one that
full text found (``fulltext``) and no keyword data did is a ``grep_search`` result; one that only vector
search found (``semantic``, which the design's two sources predate) is a ``semantic_search`` result. The
counts count the results shown: ``keyword_search_count + grep_search_count + semantic_search_count ==
count`` (``semantic_search_count`` appears only for the methods that use vectors).

``reasoning`` is one short sentence naming the evidence, strongest first: for each user keyword its
best tag (the evidence its keyword score comes from), through which relation (type, expansion weight, the keyword it was reached via, and how well
the relation fitted the user's context when one was given), which words the full text matched (the
bold words of the snippet), and whether a learned association lifted or lowered it.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, AbstractSet, Any, Iterable, Mapping, Sequence, TypedDict

if TYPE_CHECKING:
    from typing_extensions import NotRequired

KEYWORD_SEARCH = "keyword_search"
GREP_SEARCH = "grep_search"
SEMANTIC_SEARCH = "semantic_search"
KEYWORD_SOURCES = frozenset({"keyword", "expansion", "learned", "rule"})
MAX_TAGS = 3        # tag/expansion clauses in one sentence
MAX_WORDS = 4       # full-text words named
MAX_SPAN_WORDS = 6  # a longer bold span is the document's own markdown, not a match
_BOLD = re.compile(r"\*\*([^*]+?)\*\*")
_TOKEN = re.compile(r"\w+")


def design_source(sources: Iterable[str]) -> str:
    """``keyword_search`` when tags, expansions, a learned association or a pin rule found the document, else
    ``grep_search`` when full text did, else ``semantic_search`` (vectors only)."""
    sources = set(sources)
    if sources & KEYWORD_SOURCES:
        return KEYWORD_SEARCH
    return SEMANTIC_SEARCH if sources == {"semantic"} else GREP_SEARCH


class SearchCounts(TypedDict):
    keyword_search_count: int
    grep_search_count: int
    semantic_search_count: NotRequired[int]


def search_counts(results: Sequence[Mapping[str, Any]], dense: bool = False) -> SearchCounts:
    """``keyword_search_count`` and ``grep_search_count`` over the results shown, and
    ``semantic_search_count`` when the query used vectors (``dense``)."""
    def count(name: str) -> int:
        return sum(1 for r in results if r["source"] == name)

    out: SearchCounts = {"keyword_search_count": count(KEYWORD_SEARCH), "grep_search_count": count(GREP_SEARCH)}
    if dense:
        out["semantic_search_count"] = count(SEMANTIC_SEARCH)
    return out


def _tag_clause(e: Any) -> str:
    if e.kind == "exact":
        return f"tagged '{e.keyword}', your keyword"
    kind = (e.similarity_type or "related").replace("_", " ")
    via = f" via '{e.via}'" if e.via and e.via not in (e.user_keyword, e.keyword) else ""
    fit = f", context match {e.context_match:.2f}" if e.context_match is not None else ""
    article = "an" if kind[0] in "aeiou" else "a"
    return (f"tagged '{e.keyword}', {article} {kind} expansion of your keyword '{e.user_keyword}'{via} "
            f"(weight {e.weight:.2f}{fit})")


def _is_query_word(span: str, tokens: AbstractSet[str], prefixes: AbstractSet[str] | None = None) -> bool:
    """A bold span is a match marker (not the document's own markdown bold) when its words are the
    query's (inflections included: a shared prefix of 4+ letters, or the whole of a shorter word).
    ``prefixes``: the first 4 letters of the tokens of 4+ letters (computed here when not given)."""
    words = span.split()
    if not words or len(words) > MAX_SPAN_WORDS:
        return False
    if prefixes is None:
        prefixes = {t[:4] for t in tokens if len(t) >= 4}
    # a word of 4+ letters matches a token of 4+ letters sharing its first 4; a shorter word only itself
    return all((w[:4] in prefixes) if len(w) >= 4 else (w in tokens) for w in words)


@functools.lru_cache(maxsize=64)
def _query_words(terms: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str], dict[str, str]]:
    """The tokens of the query's terms, the 4-letter prefixes of those of 4+ letters, and a memo of bold
    spans already read (span -> its query word, "" for none): the same for every result of a query, so
    made once per query and each distinct span judged once."""
    tokens = frozenset(t for term in terms for t in _TOKEN.findall(term.lower()))
    return tokens, frozenset(t[:4] for t in tokens if len(t) >= 4), {}


_SPAN_MEMO_MAX = 4096


def matched_words(snippet: str | None, terms: Iterable[str]) -> list[str]:
    """The query words a full-text snippet marks in ``**bold**``, lower-cased, in order, without duplicates."""
    if not snippet or "**" not in snippet:
        return []
    tokens, prefixes, memo = _query_words(terms if isinstance(terms, tuple) else tuple(terms))
    if len(memo) > _SPAN_MEMO_MAX:
        memo.clear()
    out: list[str] = []
    for span in _bold_spans(snippet):
        w = memo.get(span)
        if w is None:
            w = " ".join(_TOKEN.findall(span.lower()))
            memo[span] = w = w if w and _is_query_word(w, tokens, prefixes) else ""
        if w and w not in out:
            out.append(w)
    return out


def _bold_spans(snippet: str) -> list[str]:
    """What ``_BOLD.findall`` finds: in the usual snippet (every ``*`` in a ``**`` marker, an even number of
    them, none adjacent) the text between the 1st and 2nd marker, the 3rd and 4th, ... found by one split."""
    markers = snippet.count("**")
    if markers % 2 or "***" in snippet or snippet.count("*") != 2 * markers:
        return _BOLD.findall(snippet)
    return snippet.split("**")[1::2]


def reasoning(evidence: list[Any], fulltext: bool, learned: float, snippet: str | None,
              terms: Iterable[str] = (), cosine: float | None = None, semantic: bool = False) -> str:
    """One sentence naming the evidence that found (or moved) a document (see the module docstring)."""
    parts: list[str] = []
    seen: set[str] = set()
    for e in sorted(evidence, key=lambda e: (-e.value, e.kind != "exact", e.keyword)) if evidence else ():
        if e.user_keyword in seen:   # the best evidence per user keyword is what counts in the score
            continue
        seen.add(e.user_keyword)
        if len(parts) < MAX_TAGS:
            parts.append(_tag_clause(e))
    if fulltext:
        words = matched_words(snippet, terms)
        shown = ", ".join(f"'{w}'" for w in words[:MAX_WORDS])
        text = f"full text matches {shown}" if words else "full text matches words of the question"
        parts.append(text if parts else f"found by full text only: {text[len('full text '):]}")
    if semantic and cosine is not None:
        text = f"close in meaning to the question (cosine {cosine:.2f})"
        parts.append(text if parts else f"found by vector search only: {text}")
    if learned > 0:
        parts.append("marked helpful for a similar earlier question (learned association)")
    elif learned < 0:
        parts.append("lowered: marked not helpful for a similar earlier question")
    if not parts:
        return "No evidence recorded."
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:] + "."
