"""Turning user text into plain terms: words, quoted phrases, known keywords.

User text is data, never query syntax: everything here produces plain term
strings; :mod:`kb_indexer.search.fulltext` quotes each as an FTS5 string
literal. Tokenising ourselves (rather than handing text to FTS5) is what makes
quotes, parentheses, ``NEAR``, ``AND``/``OR``/``NOT``, ``*``, ``^``, a
leading ``-`` and ``column:`` filters harmless: they are separators or words.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection

# English stopwords for queries: function words, the question words agents
# start questions with, and request boilerplate. Applied to the question only (the index keeps every
# word, so phrases still match).
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each e.g etc few for from further had hadn't has hasn't have haven't having he he'd he'll he's her
here here's hers herself him himself his how how's i i'd i'll i'm i've i.e if in into is isn't it it's
its itself let's may me might more most must mustn't my myself no nor not of off on once only or other
ought our ours ourselves out over own same shall shan't she she'd she'll she's should shouldn't so some
such than that that's the their theirs them themselves then there there's these they they'd they'll
they're they've this those through to too under until up upon very via was wasn't we we'd we'll we're
we've were weren't what what's when when's where where's whether which while who who's whom why why's
will with within without won't would wouldn't you you'd you'll you're you've your yours yourself
yourselves
""".split()) | frozenset("""
anything describe docs documents find give help know looking need please show something tell want
""".split())  # request boilerplate of agent questions ("Find documents about ...", "Tell me ...")

# Characters that join word parts into one term ("q-learning", "App.tsx",
# "snake_case", "don't"): the term becomes an FTS phrase of its parts.
_JOINERS = "-_.'’/"
_TRAILING_KEEP = "+#"  # c++, c#, f#
MAX_NGRAM = 6          # longest keyword (in words) looked up in a question
MAX_TERMS = 64         # terms beyond this are ignored (bounds the FTS query)
MAX_WORDS = 512        # words of a question considered at all
# A quotation of this many words or more is a cited title or sentence rather than a term: besides the exact
# phrase, its words count as the question's words, so a quotation that is not in the index word for word still
# finds what its words find (held-out CACM quotes article titles in 4 of its 52 questions: with the phrase
# alone their words were lost). A shorter quotation ("reward learning") stays an exact phrase only.
QUOTE_AS_WORDS = 4

_QUOTED = re.compile(r"[\"“”„]([^\"“”„]+)[\"“”„]")
_POSSESSIVE = re.compile(r"['’]s$")


def _is_token_char(ch: str) -> bool:
    if ch.isalnum():
        return True
    return not ch.isascii() and unicodedata.category(ch)[0] in "LNM"


def _strip_edges(word: str) -> str:
    """Drop leading/trailing punctuation (keeping a trailing + or #, as in c++)."""
    start, end = 0, len(word)
    while start < end and not _is_token_char(word[start]):
        start += 1
    while end > start and not _is_token_char(word[end - 1]) and word[end - 1] not in _TRAILING_KEEP:
        end -= 1
    core = word[start:end]
    if core and not _is_token_char(core[0]):
        return ""
    return _POSSESSIVE.sub("", core)


# An ASCII chunk's runs of word characters, joiners and kept trailing characters: what the loop in
# :func:`split_term` finds, in one regular-expression pass (most questions are ASCII).
_ASCII_RUNS = re.compile(r"[A-Za-z0-9\-_.'/+#]+")


def split_term(chunk: str) -> list[str]:
    """Split one whitespace-free chunk into terms at characters that are neither
    word characters nor joiners; joiners at the edges are dropped."""
    if chunk.isascii():
        out = _ASCII_RUNS.findall(chunk)
    else:
        out = []
        buf: list[str] = []
        for ch in chunk:
            if _is_token_char(ch) or ch in _JOINERS or ch in _TRAILING_KEEP:
                buf.append(ch)
            else:
                if buf:
                    out.append("".join(buf))
                buf = []
        if buf:
            out.append("".join(buf))
    terms = []
    for t in out:
        t = _strip_edges(t)
        if t and any(_is_token_char(c) for c in t):
            terms.append(t)
    return terms


def is_stopword(term: str) -> bool:
    t = term.lower()
    if t in STOPWORDS:
        return True
    if t.isalnum():   # no joiner: one part, not a stopword
        return False
    parts = [p for p in re.split(r"[-_.'’/]+", t) if p]
    return bool(parts) and all(p in STOPWORDS for p in parts)


@dataclass
class Word:
    """A whitespace-separated word of the question (edge punctuation stripped)."""
    raw: str        # as typed, edges stripped
    norm: str       # normalize_keyword(raw)
    terms: list[str] = field(default_factory=list)  # its plain terms (split_term)


@dataclass
class ParsedText:
    words: list[Word]
    phrases: list[str]   # user-quoted phrases, normalised


def parse_text(text: str) -> ParsedText:
    """Words and quoted phrases of free text (NFKC-normalised); the words of a quotation of
    ``QUOTE_AS_WORDS`` or more words are words too, after the text's own (the words kept are bounded)."""
    text = unicodedata.normalize("NFKC", text or "")
    phrases: list[str] = []
    quoted: list[str] = []   # long quotations' text, whose words come after the text's own words

    def _take(m: re.Match[str]) -> str:
        parts = [t for chunk in m.group(1).split() for t in split_term(chunk)]
        if parts:
            phrases.append(normalize_keyword(" ".join(parts)))
        if len(parts) >= QUOTE_AS_WORDS:
            quoted.append(m.group(1))
        return " "

    if text.count('"') >= 2 or "“" in text:
        text = " ".join([_QUOTED.sub(_take, text), *quoted])   # a long quotation never crowds out the question
    words = []
    for chunk in text.split()[:MAX_WORDS]:
        raw = _strip_edges(chunk)
        if not raw:
            continue
        words.append(Word(raw=raw, norm=normalize_keyword(raw), terms=split_term(chunk)))
    return ParsedText(words=words, phrases=phrases)


_JOINER_SPLIT = re.compile(r"[-_.'’/]+")


def content_terms(words: list[Word], skip: set[int] | None = None) -> list[str]:
    """Single lower-case words for full text: stopwords removed, joined words split.

    "state-of-the-art" gives "state", "art"; repeated words are kept (query term
    frequency counts in BM25). Known keywords and identifiers are searched as
    phrases instead (see :mod:`kb_indexer.search.query`).
    """
    out = []
    for i, w in enumerate(words):
        if skip and i in skip:
            continue
        for t in w.terms:
            t = t.lower()
            if is_stopword(t):
                continue
            for part in _JOINER_SPLIT.split(t):
                if part and part not in STOPWORDS and any(_is_token_char(c) for c in part):
                    out.append(part)
    return out


def find_known_keywords(conn: Connection, words: list[Word]) -> list[tuple[int, int, int, str]]:
    """Known keywords (multi-word ones too) in the question, longest match first.

    Returns non-overlapping ``(start, end, keyword_id, keyword)`` spans, left to
    right. One SQL round trip: every n-gram up to MAX_NGRAM words is looked up.
    """
    grams: dict[str, list[tuple[int, int]]] = {}
    n_words = len(words)
    norms = [w.norm for w in words]
    content = [not is_stopword(n) for n in norms]   # once a word, not once per n-gram holding it
    for i in range(n_words):
        for n in range(1, MAX_NGRAM + 1):
            if i + n > n_words:
                break
            if not any(content[i:i + n]):
                continue
            gram = " ".join(norms[i:i + n])
            grams.setdefault(gram, []).append((i, i + n))
    if not grams:
        return []
    found = {r[1]: r[0] for r in conn.execute(
        "SELECT id, keyword FROM keywords WHERE keyword IN (SELECT value FROM json_each(?))",
        (json.dumps(list(grams)),))}
    if not found:
        return []
    spans = sorted(((s, e, g) for g in found for s, e in grams[g]), key=lambda x: (x[0], -(x[1] - x[0])))
    out, pos = [], 0
    for s, e, g in spans:
        if s >= pos:
            out.append((s, e, found[g], g))
            pos = e
    return out


def phrase(text: str) -> str:
    """A keyword or identifier as one full-text term (its parts, space-joined: a phrase)."""
    return " ".join(t for chunk in text.split() for t in split_term(chunk))


def note_names(exact: list[Any]) -> list[str]:
    """A markdown file named in the question (``retry-policy.md``: identifiers of kind "file name") is most likely
    the note itself: the name without its extension, as a phrase (the note's title, or its text), beside the
    whole name's."""
    out = []
    for ident in exact:
        stem, dot, ext = ident.text.rpartition(".")
        if ident.kind == "file name" and dot and ext.lower() in ("md", "markdown") and stem:
            out.append(phrase(stem.rsplit("/", 1)[-1]))
    return out


def question_terms(text: str) -> list[str]:
    """Sorted distinct content terms of a question (stopwords removed, light plural folding): what a learned
    association and a search rule (:mod:`kb_indexer.search.rules`) compare questions by."""
    out = set()
    for t in content_terms(parse_text(text).words):
        t = t.lower()
        if len(t) > 3 and t.endswith("s") and not t.endswith("ss"):
            t = t[:-1]
        out.add(t)
    return sorted(out)
