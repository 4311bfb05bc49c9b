"""Tokens for skill matching: whole words, never substrings.

Text is NFKC-normalised and lower-cased, split into words as :mod:`kb_indexer.search.terms` does (user
text is data: punctuation and query syntax are separators), joined words are split (``spotify-player``,
``snake_case`` and ``App.tsx`` give their parts), stopwords and one-letter words are dropped, and the
Snowball English stemmer folds plurals and ``-ing``/``-ed`` forms (``deploying``, ``deployed`` and
``deployments`` are ``deploy``; ``start`` never becomes ``art``). Runs of CJK characters (Han, kana, Hangul), which are written without
spaces between words, become overlapping character bigrams, so a Chinese or Korean message can match a
description in the same script.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Protocol

import snowballstemmer  # every match stems its message; 1.5 ms to import (PyStemmer's C code when installed)

from kb_indexer.search.terms import STOPWORDS, is_stopword, split_term

#: Bumped whenever the tokens change: stored tokens of another version are recomputed.
VERSION = 2

# Chat filler that says nothing about which skill is needed (on top of the search stopwords).
CHAT_STOPWORDS = frozenset("""
hey hi hello thanks thank ok okay lol pls plz just really actually maybe like want wanna gonna
hm hmm yes yeah yep nope sure cool great nice awesome
""".split()) | frozenset("""
de la el los las del en un una por con es se al lo le les des du et est mi tu su que
""".split())  # the commonest Spanish/French function words (messages in those languages are common)

_JOINERS = re.compile(r"[-_.'’/]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+")


def _cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English (Porter 2) stem of a word (``meetings`` and ``meeting`` are ``meet``; ``news``
    stays ``news``): the same function on both sides of a match. Non-ASCII and short words stay as they are."""
    if not word.isascii() or not word.isalpha() or len(word) <= 3:
        return word
    return _english().stemWord(word)


class _Stemmer(Protocol):
    def stemWord(self, word: str) -> str: ...  # noqa: N802 (snowballstemmer's name)


@lru_cache(maxsize=1)
def _english() -> _Stemmer:
    stemmer: _Stemmer = snowballstemmer.stemmer("english")
    return stemmer


def _word_tokens(part: str) -> list[str]:
    out: list[str] = []
    pos = 0
    for m in _CJK.finditer(part):
        out.extend(_plain(part[pos:m.start()]))
        out.extend(_cjk_bigrams(m.group()))
        pos = m.end()
    out.extend(_plain(part[pos:]))
    return out


def _plain(word: str) -> list[str]:
    if not word or word in STOPWORDS or word in CHAT_STOPWORDS:
        return []
    if len(word) < 2:  # single letters and digits ("x", the "2" of "cloudflare-2")
        return []
    return [stem(word)]


def compounds(text: str) -> list[str]:
    """The stems of every two adjacent words written as one (``last.fm`` and ``find my`` give ``lastfm`` and
    the stem of ``findmy``), so a name written as one word ("lastfm", "icloud-findmy") matches a message that
    writes it as two. The caller keeps only those some skill has; stopwords count here ("my" of "find my")."""
    words = [w for w in re.split(r"[\W_]+", unicodedata.normalize("NFKC", text or "").lower()) if w]
    return [stem(a + b) for a, b in zip(words, words[1:]) if (a + b).isascii() and (a + b).isalpha()]


def tokens(text: str) -> list[str]:
    """The match tokens of ``text`` in order (repeats kept: term frequency counts)."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    out: list[str] = []
    for chunk in text.split():
        for term in split_term(chunk):
            if is_stopword(term):
                continue
            for part in _JOINERS.split(term):
                if part:
                    out.extend(_word_tokens(part))
    return out
