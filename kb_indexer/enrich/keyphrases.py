"""A statistical keyphrase extractor: corpus-level TF-IDF over noun-phrase-like n-grams.

Candidates are the 1- to MAX_N-word runs of a document that contain no stopword, no number and no
punctuation (RAKE's phrase delimiters), so "the lift increase due to slipstream" yields "lift increase"
and "slipstream" (with MAX_N >= 2). Stopwords here are the query stopwords, reporting and discourse words, words
naming a kind of text ("notes") and :data:`kb_indexer.enrich.weak_words.LOW_CONTENT`: verbs any text uses, in
every inflection, vague adjectives and adverbs, general nouns (``adds``, ``fast``, ``enough``, ``back``,
``try``); past participles and -ly adverbs go by their ending. Such a word capitalised after a lower-case word
is a name and stays ("the local Things database"). Each candidate is scored

    score = (occurrences in the body + TITLE_WEIGHT x occurrences in the title) x idf x (1 + 0.5 (n - 1))
            x (1 + POSITION_BONUS / sqrt(1 + k))     (k: how many candidates came first)
            x VERB_WEIGHT for an -s or -ing form used as a verb (:meth:`CorpusStats.is_verb`)

with ``idf = ln(N / df)`` from the corpus' document frequencies (:class:`CorpusStats`): phrases in more
than MAX_DF of the documents are too common to tell documents apart, and a phrase of two or three words
must occur in at least MIN_PHRASE_DF documents and in at least COLLOCATION of the documents holding its
rarest word (a real term recurs; a chance word sequence does not). The best
``keyword_count(words)`` phrases are kept, with a category from their shape (:func:`categorise`); of two
equal scores the earlier word wins (in alphabetical order, the last places of a short note went to
``afterwards`` and ``back``). A small knowledge base gives document frequency no say (a word on one note of
18 looks rare), so it is the word lists, the verb cues and the position that keep a note's keywords on its
topic; bench/enrich_keywords.py measures them (docs/automatic-indexing.md has the figures).

MAX_N is 1: kbindex's query planner searches a known multi-word keyword as one exact phrase, so a
generated vocabulary of phrases makes the full-text part of every query stricter. On Cranfield
(bench/enrich_eval.py) phrases of up to 3 words cost hybrid retrieval 0.01-0.07 nDCG@10 even as strict
collocations, while single words kept it at or above plain full text (docs/automatic-indexing.md has the figures).

Nothing is downloaded and nothing but the standard library is used: about 2,000 short documents a second.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from kb_indexer.index.markdown import without_code_blocks
from kb_indexer.enrich.weak_words import LOW_CONTENT, NOUN_BEFORE, OBJECT_AFTER, VERB_BEFORE
from kb_indexer.search.terms import STOPWORDS

MAX_N = 1            # longest candidate, in words (see the module docstring: 1 by default)
TITLE_WEIGHT = 3.0   # a title occurrence counts this many body occurrences
MIN_PHRASE_DF = 3
COLLOCATION = 0.5
MAX_DF = 0.25        # candidates in more than this share of the documents are dropped
MIN_KEYWORDS, MAX_KEYWORDS = 10, 25
CATEGORIES = ("primary", "concepts", "tools", "people", "abbreviations")
PRIMARY_COUNT = 4
VERB_MIN = 2         # verb cues (more than its noun cues) that make a word a verb: see CorpusStats.is_verb
VERB_WEIGHT = 0.25   # a verb's score is multiplied by this
POSITION_BONUS = 1.0  # the first candidate of a document scores 1 + this, the k-th 1 + this / sqrt(k)

# Words that never start, end or sit inside a keyphrase, beyond the query stopwords: reporting verbs,
# vague quantities and discourse words that any text uses.
_EXTRA_STOP = frozenset("""
able according actually additional almost already although always among another anyway apparently
appear appears approximately available based become becomes being best better certain certainly
clearly consider considered considering contains corresponding currently describe described describes
different due either else especially even ever every example examples fact far following follows
found further furthermore generally get gets given gives giving good great hence however
important including indeed instead least less like likely made mainly make makes making many mean
means merely mostly much namely nearly necessary necessarily neither never nevertheless new next none
often one ones order otherwise overall particular particularly per perhaps possible possibly present
presented presents previously probably provide provided provides quite rather really recently regarding
related relatively respectively result resulting results said say says see seem seems seen shown shows
show significant significantly similar similarly since so still sufficient suggest suggests sure take
taken takes therefore though thus together toward towards two three four five six seven eight nine ten
typically unless upon use used useful uses using usually various way ways well whereas whether whose
within without yet zero true false
""".split())
# Words that say what kind of text a document is, not what it is about ("Learning rate notes").
_GENRE = frozenset("""
cheatsheet draft faq guide howto intro introduction memo misc note notes overview page readme section
summary todo tutorial walkthrough
""".split())
STOP = STOPWORDS | _EXTRA_STOP | _GENRE | LOW_CONTENT

_TOKEN = re.compile(r"\w[\w'’+#.-]*[\w+#]|\w|[^\w\s]")
_PARTICIPLE = re.compile(r"^[a-z]{4,}(?<!e)ed$")  # "combined", "obtained": verbs, not noun-like (not "speed")
# Adverbs ("appropriately", "carefully", "seemingly"): the -ly endings that are (almost) never a noun's.
_ADVERB = re.compile(r"^[a-z]{3,}(?:ally|ately|ently|antly|ingly|ively|ously|fully|lessly|edly|ably|ibly)$")
# TeX math: a $$...$$ display (over lines too) or an inline $...$ without a space inside either dollar and no word
# right after it ("$5 or $6", "$HOME/$USER": none)
_MATH = re.compile(r"\$\$.+?\$\$|\$(?=[^\s$])[^$\n]*?(?<=[^\s$\\])\$(?!\w)", re.DOTALL)
_POSSESSIVE = re.compile(r"(?<=\w)['’]s$", re.IGNORECASE)
_HAS_LETTER = re.compile(r"[^\W\d_]")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9&]{1,7}s?$")
_CODEISH = re.compile(r"[a-z][A-Z]|[._/#+]|\d")
_CODE_SPAN = re.compile(r"`([^`\n]{2,60})`")
_INFLECTED = re.compile(r"(?:[^s]s|ing)$")   # "adds", "injecting" (not "glass")
# A blank line, or a line that starts a heading, a list item or a quotation, ends a sentence (a title has no full
# stop; a "Stayed in Alfama" after it starts one).
_BLOCK_BREAK = re.compile(r"\n[ \t]*(?:\n|(?=[#>*+-]|\d+[.)]))")
_SENTENCE_MARKS = frozenset(".!?:;")   # a word after one of these starts a sentence ("Add the salt")
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z]\.)?\s+[A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b")


def tokens(text: str) -> list[str]:
    """Words and punctuation marks, in order (a punctuation mark delimits phrases)."""
    return _TOKEN.findall(text)


@lru_cache(maxsize=1 << 16)   # a text's words repeat: each is judged once
def _is_word(tok: str) -> bool:
    low = tok.lower()
    return (bool(_HAS_LETTER.search(tok)) and low not in STOP and (len(tok) > 2 or bool(_ACRONYM.match(tok)))
            and not _PARTICIPLE.search(low)
            and not _ADVERB.search(low) and not tok.endswith("_"))   # "r_" of "r_{t+1}"


def _is_name(tok: str) -> bool:
    """A capitalised low-content word after a lower-case one is a name ("the local Things database")."""
    return tok[:1].isupper() and tok[1:].islower() and len(tok) > 2 and tok.lower() in LOW_CONTENT


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and TeX math (each checked for only when its marks occur)."""
    if "```" in text or "~~~" in text:
        text = without_code_blocks(text)
    return _MATH.sub(" . ", text) if "$" in text else text


def candidates(text: str) -> Iterable[tuple[str, str]]:
    """``(normalised phrase, surface form)`` for every 1..MAX_N-word run without a stopword, in the prose of
    ``text`` (fenced code blocks and ``$...$`` math left out: ``def``, ``import``, ``bin`` and the ``theta`` of
    ``$\\pi_\\theta$`` say nothing of the topic), a possessive is its word (``Sutton's`` is ``Sutton``).
    A word's inflections stay apart (``flow`` and ``flows``): folded to one, on Cranfield (bench/enrich_eval.py)
    keyword-only nDCG@10 fell from 0.3584 to 0.3498 and hybrid from 0.3973 to 0.3911, below no
    keywords at all (a question's own inflection matches a keyword exactly)."""
    return analyse(text, cues=False).found


@dataclass
class Analysis:
    """One text's candidates in order, and how often each word stood where a verb or a noun stands."""

    found: list[tuple[str, str]] = field(default_factory=list)
    verb: Counter[str] = field(default_factory=Counter)
    noun: Counter[str] = field(default_factory=Counter)


def analyse(text: str, cues: bool = True) -> Analysis:
    """The candidates of ``text`` (see :func:`candidates`) and, with ``cues``, the verb and noun cues of its words
    (:func:`_cue`)."""
    out = Analysis()
    run: list[str] = []
    toks = tokens(_BLOCK_BREAK.sub(" . ", _prose(text))) + ["."]
    prev = "."
    for i, tok in enumerate(toks):
        if "'" in tok or "’" in tok:
            tok = _POSSESSIVE.sub("", tok)
        if _is_word(tok) or (tok[0].isupper() and prev.islower() and _is_name(tok)):
            run.append(tok)
            if cues:
                _cue(out, tok, prev.lower(), toks[i + 1].lower())
        elif run:
            if MAX_N == 1:
                out.found.extend((w.lower(), w) for w in run)
            else:
                for j in range(len(run)):
                    for n in range(1, min(MAX_N, len(run) - j) + 1):
                        words = run[j:j + n]
                        out.found.append((" ".join(w.lower() for w in words), " ".join(words)))
            run = []
        prev = tok
    return out


def _cue(out: Analysis, tok: str, before: str, after: str) -> None:
    """Right before ``the``/``it`` a word is a verb with its object (``add the salt``, ``close it``: a noun is
    seldom followed so), right after ``it``/``to``/``can`` a verb (``it adds``; an -s form so placed surely is),
    right after ``the``/``of`` a noun. Lower-case words only, and a sentence's capitalised first word."""
    if not (tok.islower() or (before in _SENTENCE_MARKS and tok[1:].islower())):
        return
    low = tok.lower()
    if after in OBJECT_AFTER:
        out.verb[low] += 2
    elif before in VERB_BEFORE:
        out.verb[low] += 2 if low.endswith("s") and not low.endswith("ss") else 1
    elif before in NOUN_BEFORE:
        out.noun[low] += 1


@dataclass
class CorpusStats:
    """Document frequencies of candidate phrases over a corpus (or a sample of it), and its words' verb and
    noun cues (:func:`analyse`)."""

    docs: int = 0
    df: Counter[str] = field(default_factory=Counter)
    verb: Counter[str] = field(default_factory=Counter)
    noun: Counter[str] = field(default_factory=Counter)

    def add(self, text: str) -> None:
        self.docs += 1
        seen = analyse(text)
        self.df.update({p for p, _ in seen.found})
        self.verb.update(seen.verb)
        self.noun.update(seen.noun)

    @classmethod
    def of(cls, texts: Iterable[str]) -> "CorpusStats":
        stats = cls()
        for t in texts:
            stats.add(t)
        return stats

    def idf(self, phrase: str) -> float:
        df = max(1, self.df.get(phrase, 0))
        return math.log((self.docs + 1) / df)

    def is_verb(self, word: str) -> bool:
        """Used as a verb more than as a noun, by its neighbours over the corpus (:func:`analyse`), with at
        least VERB_MIN verb cues (one "to overfitting" does not make a verb)."""
        v = self.verb.get(word, 0)
        return v >= VERB_MIN and v > self.noun.get(word, 0)


@dataclass
class Keyphrase:
    keyword: str
    score: float
    category: str


def keyword_count(words: int) -> int:
    """How many keywords a document of ``words`` words gets: 10 for a short note, up to 25."""
    return max(MIN_KEYWORDS, min(MAX_KEYWORDS, 8 + words // 60))


def extract(body: str, title: str, stats: CorpusStats, limit: int | None = None) -> list[Keyphrase]:
    """The best keyphrases of one document, best first, each with a category."""
    counts: defaultdict[str, float] = defaultdict(float)   # term -> weighted occurrences
    surface: dict[str, Counter[str]] = {}
    first: dict[str, int] = {}                              # term -> rank of its first occurrence
    body = body or ""
    for text, weight in ((title or "", TITLE_WEIGHT), (body, 1.0)):
        for norm, shown in candidates(text):
            counts[norm] += weight
            surface.setdefault(norm, Counter())[shown] += 1
            first.setdefault(norm, len(first))
    words = len((title or "").split()) + len(body.split())
    n_docs = max(stats.docs, 1)
    scored = []
    for norm, tf in counts.items():
        df = stats.df.get(norm, 0)
        n = norm.count(" ") + 1
        if df > MAX_DF * n_docs and n_docs >= 20:
            continue
        if n > 1 and n_docs >= 20 and (df < MIN_PHRASE_DF or df < COLLOCATION * min(
                stats.df.get(w, 0) for w in norm.split())):
            continue
        score = tf * stats.idf(norm) * (1 + 0.5 * (n - 1)) * (1 + POSITION_BONUS / (1 + first[norm]) ** 0.5)
        if n == 1 and _INFLECTED.search(norm) and stats.is_verb(norm):
            score *= VERB_WEIGHT
        scored.append((score, first[norm], norm))
    scored.sort(key=lambda x: (-x[0], x[1]))
    k = limit or keyword_count(words)
    chosen = [(s, _display(surface[norm])) for s, _, norm in scored[:k]]
    return categorise(chosen, body)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
LEAD_SENTENCES, LEAD_MAX = 2, 300


def lead_summary(paragraph: str | None) -> str:
    """The statistical summary: the first sentences (at most LEAD_SENTENCES, LEAD_MAX characters) of the
    document's first paragraph, the extractive baseline an LLM summary replaces."""
    text = " ".join((paragraph or "").split()).rstrip("…")
    out = ""
    for sentence in _SENTENCE_END.split(text)[:LEAD_SENTENCES]:
        joined = f"{out} {sentence}".strip()
        if out and len(joined) > LEAD_MAX:
            break
        out = joined
    if len(out) > LEAD_MAX:
        out = out[:LEAD_MAX].rsplit(" ", 1)[0] + "…"
    return out


def _display(forms: Counter[str]) -> str:
    """The spelling to show: an acronym or a capitalised name as written, anything else lower case."""
    shown = forms.most_common(1)[0][0]
    if any(_ACRONYM.match(w) or _CODEISH.search(w) for w in shown.split()):
        return shown
    return shown.lower()


def categorise(chosen: list[tuple[float, str]], body: str) -> list[Keyphrase]:
    """primary for the best few; abbreviations, tools and people by shape; concepts for the rest."""
    code = {m.lower() for m in _CODE_SPAN.findall(body or "")}
    names = {m.lower() for m in _NAME.findall(body or "")}
    out = []
    for i, (score, kw) in enumerate(chosen):
        low = kw.lower()
        if _ACRONYM.match(kw):
            cat = "abbreviations"
        elif low in code or (" " not in kw and _CODEISH.search(kw)):
            cat = "tools"
        elif low in names:
            cat = "people"
        elif i < PRIMARY_COUNT:
            cat = "primary"
        else:
            cat = "concepts"
        out.append(Keyphrase(kw, round(score, 4), cat))
    return out
