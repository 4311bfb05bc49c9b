"""Pseudo-relevance feedback (RM3-style) for full text: words of the best first-pass documents join the query.

A first full-text pass ranks the documents (``FB_FUSED_DOCS``, off: fused with the vectors' ranking when
a hybrid query has them); the ``FB_DOCS`` best of them are read (title and body, the
first ``FB_MAX_CHARS`` characters) and every content word gets the relevance-model weight

    w(word) = sum over those documents of  bm25(D) / sum of their bm25  ×  tf(word, D) / |D|

(RM1: the word's share of the document, weighted by how well the document matched). Words of the question
itself, stopwords, numbers and words of fewer than 3 letters are left out; inflections are counted together
(a crude suffix stem, only for grouping: the index's own porter stemmer matches each word). The
``FB_TERMS`` heaviest words found in at least two of those documents form the feedback query, each word
once. A second pass scores them with the same bm25 (so a feedback word common across the collection
weighs little), and a document's full-text score is

    bm25(question) + FB_WEIGHT × bm25(feedback words)

Documents only the feedback words match become candidates too; every result the feedback words match
says ``feedback`` in its ``sources`` (after ``fulltext``), and ``--explain`` lists the words and their
weights (``fulltext_feedback``); snippets and the reasoning's matched words stay the question's.

The words come from the documents' text, and each one reaches the full-text index as a plain term
(an FTS5 string literal, like any question word): user and document text stay data.

Full text alone uses it (``fulltext``, and ``hybrid`` without vectors; with vectors only when
``FB_WITH_VECTORS``), on knowledge bases of at least ``FB_MIN_DOCS`` documents: on a small one the first pass's best
documents are a large share of everything, and their words say little about the question.
Tuned on Cranfield only (bench/ir_eval.py --prf DOCS:TERMS:REPEAT, full text, nDCG@10; none: 0.3651):
10:10:2 0.3808, 5:10:2 0.3798, 10:20:2 0.3690, 10:10:3 0.3852 (kept: FB_WEIGHT 1/3), 10:10:4 0.3800,
10:5:3 0.3794, 10:15:3 0.3741. The held-out collections are only reported.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from kb_indexer.search import fulltext, sparse
from kb_indexer.search.fusion import W_DENSE, W_FULLTEXT
from kb_indexer.search.terms import STOPWORDS
from kb_indexer.store import fulltext as store
from kb_indexer.store.dbapi import Connection

FB_DOCS = 10            # first-pass documents read
FB_TERMS = 10           # feedback words kept
FB_WEIGHT = 1 / 3       # a feedback word's bm25 counts this share of a question term's
FB_MIN_DOCS = 500       # smaller knowledge bases: no feedback
FB_MIN_SUPPORT = 2      # a feedback word appears in at least this many of the FB_DOCS documents
FB_MAX_CHARS = 20_000   # characters of a document read for its words
# With vectors, choose the feedback documents by full text and vectors fused: off (Cranfield, hybrid with
# all-MiniLM-L6-v2, same run: nDCG@10 0.4107 fused vs 0.4135 by full text alone; R@100 0.8023 vs 0.7925).
FB_FUSED_DOCS = False
# Feedback in a hybrid query that has vectors: off. Same runs, hybrid with all-MiniLM-L6-v2, nDCG@10 without vs
# with feedback: Cranfield 0.4072 vs 0.4135, held-out CISI 0.4537 vs 0.4466 (it must not hurt an unseen
# collection; the vectors already bring in documents worded differently from the question).
FB_WITH_VECTORS = False

WORD = re.compile(r"[^\W\d_]{3,}")   # a content word: 3+ letters (no digits)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "ly")


@dataclass
class Feedback:
    """The feedback words with their relevance-model weights, heaviest first."""

    terms: list[tuple[str, float]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.terms)


# The longest of _SUFFIXES that leaves 3 characters (where two end a word, the longer is listed first: the first
# that fits is the longest): of one word, and of many words one to a line, in one call
_ENDING = "|".join(_SUFFIXES)
_STEM = re.compile(rf"(?s)\A(.{{3,}}?)(?:{_ENDING})\Z")
_STEM_LINES = re.compile(rf"(?m)^(.{{3,}}?)(?:{_ENDING})$")


def stem(word: str) -> str:
    """A crude suffix stem, only to count a word's inflections together."""
    return _STEM.sub(r"\1", word)


def stems(words: list[str]) -> list[str]:
    """``stem`` of each of ``words`` (words without a line break: ``WORD``'s), in one pass."""
    return _STEM_LINES.sub(r"\1", "\n".join(words)).split("\n") if words else []


def top_documents(scores: dict[int, float]) -> list[tuple[int, float]]:
    """The ``FB_DOCS`` best ``(document, bm25)`` (ties by document id: deterministic)."""
    return heapq.nsmallest(FB_DOCS, ((d, s) for d, s in scores.items() if s > 0), key=lambda x: (-x[1], x[0]))


def feedback_terms(conn: Connection, question_terms: tuple[str, ...],
                   top: list[tuple[int, float]]) -> list[tuple[str, float]]:
    """The ``FB_TERMS`` heaviest words of the ``top`` documents by their relevance-model weight (see the
    module docstring), each as its most frequent spelling, heaviest first."""
    if len(top) < FB_MIN_SUPPORT:
        return []
    asked = {stem(w) for t in question_terms for w in WORD.findall(t.lower())}
    texts = document_texts(conn, [d for d, _ in top])
    total = sum(s for _, s in top)
    weight: defaultdict[str, float] = defaultdict(float)
    support: Counter[str] = Counter()
    spelling: Counter[str] = Counter()    # each spelling's count over the documents
    stems: dict[str, str] = {}
    for doc, score in top:
        words = Counter(WORD.findall(texts.get(doc, "").lower()))
        for w in [w for w in words if w in STOPWORDS]:
            del words[w]
        length = sum(words.values())
        if not length:
            continue
        counts: Counter[str] = Counter()
        for w, tf in words.items():
            s = stems.get(w) or stems.setdefault(w, stem(w))
            counts[s] += tf
            spelling[w] += tf
        share = score / total / length
        for s, tf in counts.items():
            if s not in asked:
                weight[s] += share * tf
                support[s] += 1
    kept = [(s, w) for s, w in weight.items() if support[s] >= FB_MIN_SUPPORT]
    best = heapq.nsmallest(FB_TERMS, kept, key=lambda x: (-x[1], x[0]))
    forms: dict[str, tuple[int, str]] = {}   # stem -> its most frequent spelling (ties: the first in order)
    for w, n in spelling.items():
        s = stems[w]
        if s not in forms or (-n, w) < (-forms[s][0], forms[s][1]):
            forms[s] = (n, w)
    return [(forms[s][1], w) for s, w in best]


def document_texts(conn: Connection, doc_ids: list[int], max_chars: int = FB_MAX_CHARS) -> dict[int, str]:
    """Title and the start of the body (``max_chars``) of each document."""
    return {d: f"{title}\n{head}" for d, _, title, head in store.heads(conn, doc_ids, max_chars)}


@dataclass
class Scored:
    """Every matching document's full-text score with feedback: the sparse index's (``scores``) or a
    dictionary (``by_doc``), and what the feedback words added (``added``: of the documents they match)."""

    feedback: Feedback
    scores: sparse.Scores | None = None
    by_doc: dict[int, float] | None = None
    second: sparse.Scores | dict[int, float] | None = None    # the feedback words' bm25 alone
    snippets: dict[int, str] = field(default_factory=dict)     # of the question's best documents

    def lifted(self, doc_ids: list[int]) -> set[int]:
        """Which of the documents the feedback words match."""
        if self.second is None:
            return set()
        if isinstance(self.second, sparse.Scores):
            return {d for d, s in self.second.get(doc_ids).items() if s > 0}
        return {d for d in doc_ids if self.second.get(d, 0.0) > 0}


def fused_top(lexical: dict[int, float], dense: dict[int, float] | None) -> list[tuple[int, float]]:
    """The feedback documents: the best by bm25, or, when vectors ran (``dense``: the documents they found,
    normalised as fusion does), by full text and vectors fused with fusion's weights."""
    if not dense or not FB_FUSED_DOCS:
        return top_documents(lexical)
    best = max(lexical.values(), default=0.0) or 1.0
    fused = {d: W_FULLTEXT * max(0.0, lexical.get(d, 0.0)) / best + W_DENSE * dense.get(d, 0.0)
             for d in set(lexical) | set(dense)}
    return top_documents(fused)


def score(conn: Connection, query: fulltext.FtsQuery, col_w: tuple[float, ...], view: sparse.View | None,
          limit: int, dense: dict[int, float] | None = None) -> Scored:
    """bm25(question) + ``FB_WEIGHT`` × bm25(feedback words) of every document either matches (two passes:
    the question's, whose best ``FB_DOCS`` give the words, and the words'). Without the sparse index, the
    question's best ``limit`` documents come with their snippets first (FTS5 makes them fastest while it
    ranks; most results are among them)."""
    snippets: dict[int, str] = {}
    if view is not None:
        first = sparse.score(conn, view, query.terms, fulltext.phrase_sql(col_w))
        lexical = first.best_with_ties(FB_DOCS, set(), 0.0)
        top = fused_top({**lexical, **first.get(list(dense or ()))}, dense)
    else:
        ranked = fulltext.search(conn, query, max(limit, FB_DOCS), col_w)
        snippets = {d: snip for d, _, snip in ranked if snip}
        by_doc = fulltext.all_scores(conn, query, col_w)
        top = fused_top(by_doc if dense else {d: s for d, s, _ in ranked}, dense)
    terms = feedback_terms(conn, query.terms, top)
    words = fulltext.build_query([t for t, _ in terms])
    out = Scored(Feedback(terms), snippets=snippets)
    if view is not None:
        if words:   # one more pass over the (cached) postings: question terms weigh 1, feedback words FB_WEIGHT
            out.second = sparse.score(conn, view, words.terms, fulltext.phrase_sql(col_w))
            out.scores = sparse.score(conn, view, query.terms + words.terms, fulltext.phrase_sql(col_w),
                                      [1.0] * len(query.terms) + [FB_WEIGHT] * len(words.terms))
        else:
            out.scores = first
    else:
        second_d = fulltext.all_scores(conn, words, col_w) if words else {}
        for d, s in second_d.items():
            by_doc[d] = by_doc.get(d, 0.0) + FB_WEIGHT * s
        out.by_doc, out.second = by_doc, second_d
    return out
