"""Tokens for skill matching: whole words, never substrings.

Text is NFKC-normalised and lower-cased, split into words as :mod:`kb_indexer.search.terms` does (user
text is data: punctuation and query syntax are separators), joined words are split (``spotify-player``,
``snake_case`` and ``App.tsx`` give their parts), stopwords and one-letter words are dropped, and the
Snowball English stemmer folds plurals and ``-ing``/``-ed`` forms (``deploying``, ``deployed`` and
``deployments`` are ``deploy``; ``start`` never becomes ``art``), after the words British and American English
spell apart are folded to one spelling (``summarise`` and ``summarize``, ``colour`` and ``color``:
:func:`one_spelling`; skill descriptions are mostly written the American way, messages either way). Runs of
CJK characters (Han, kana, Hangul), which are written without spaces between words, become overlapping
character bigrams, so a Chinese or Korean message can match a description in the same script.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Protocol

import snowballstemmer  # every match stems its message; 1.5 ms to import (PyStemmer's C code when installed)

from kb_indexer.search.terms import STOPWORDS, is_stopword, split_term

#: Bumped whenever the tokens change: stored tokens of another version are recomputed.
VERSION = 3

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
    stays ``news``), British and American spellings folded first (:func:`one_spelling`): the same function on
    both sides of a match. Non-ASCII and short words stay as they are."""
    if not word.isascii() or not word.isalpha() or len(word) <= 3:
        return word
    return _english().stemWord(one_spelling(word))


# One spelling for the words British and American English spell apart, applied to both sides of a match.
# British -ise/-yse forms become -ize/-yze, so that the stemmer takes the suffix off as it does for American
# ones ("tokenise", "tokenize" and "token" are one word), except the words both dialects spell -ise
# ("advertise", "supervise", "exercise", "-wise": their "advertisement" and "supervision" must still match);
# -our roots and their derived words ("colourful", "favourite") lose the u; the -re, -ogue, -ence and -mme
# words, and the doubled l of "travelled" and "modelling", take the American form (lists: "four", "genre" and
# "programmer" stay).
_ISE = re.compile(r"^([a-z]{3,})(is|ys)(e|ed|es|ing|er|ers|ation|ations|ational|able)$")
_BOTH_ISE = frozenset("""
advertise advise appraise apprise chastise circumcise comprise compromise concise cruise bruise demise despise
devise disguise enterprise excise exercise expertise franchise improvise incise merchandise mortise paradise
porpoise praise precise premise promise reprise revise sunrise supervise surmise surprise televise tortoise
treatise turquoise chemise valise
""".split())
_OUR = re.compile(r"^(colo|flavo|behavio|favo|hono|humo|labo|neighbo|rumo|harbo|vapo|savo|endeavo|armo|odo|parlo|"
                  r"vigo|rigo|tumo)ur")
_DOUBLE_L = re.compile(r"^(travel|cancel|model|label|level|fuel|signal|channel|tunnel|counsel)l(ed|ing|er|ers|or|ors)$")
_WORDS = {b: a for pair in """
centre:center centres:centers centred:centered metre:meter metres:meters theatre:theater theatres:theaters
fibre:fiber fibres:fibers litre:liter litres:liters calibre:caliber catalogue:catalog catalogues:catalogs
dialogue:dialog dialogues:dialogs analogue:analog licence:license licences:licenses defence:defense
offence:offense programme:program programmes:programs
""".split() for b, a in [pair.split(":")]}


def one_spelling(word: str) -> str:
    """``word`` (lower case) in the one spelling both dialects fold to, the American one: ``summarise``
    gives ``summarize``, ``analysed`` ``analyzed``, ``organisations`` ``organizations``, ``colours``
    ``colors``, ``favourite`` ``favorite``, ``cancelled`` ``canceled``, ``centre`` ``center``; ``advertise``
    and ``otherwise`` stay. Other words are returned as they are."""
    m = _ISE.match(word)
    if m:
        base = m.group(1) + m.group(2) + "e"
        if base in _BOTH_ISE or base.endswith("wise"):
            return word
        return m.group(1) + ("iz" if m.group(2) == "is" else "yz") + m.group(3)
    m = _OUR.match(word)
    if m:
        return m.group(1) + "r" + word[m.end():]
    m = _DOUBLE_L.match(word)
    if m:
        return m.group(1) + m.group(2)
    return _WORDS.get(word, word)


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


def spellings(text: str) -> dict[str, str]:
    """Each match token of ``text`` and the word of ``text`` it comes from, lower-cased (``retri``: ``retry``),
    for saying which words matched in the message's own words; the first such word when several fold to one."""
    out: dict[str, str] = {}
    for word in re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text or "").lower()):
        for token in _word_tokens(word):
            out.setdefault(token, word)
    return out


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
