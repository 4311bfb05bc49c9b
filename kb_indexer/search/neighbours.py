"""Score regularisation: a document among the best results is judged by its neighbours too.

Relevant documents tend to resemble one another more than they resemble the other documents a question's
words happen to match (the cluster hypothesis). So, once the candidates are fused (and learned associations
applied), each of the ``NB_DOCS`` best is compared with the others by its words, and its score moves towards
the scores of the ``NB_NEIGHBOURS`` most similar of them (Diaz, "Regularizing ad hoc retrieval scores", CIKM 2005):

    score'(D) = (1 - NB_WEIGHT) x score(D) + NB_WEIGHT x sum_N sim(D, N) x score(N) / sum_N sim(D, N)

over the best ``NB_DOCS`` (and those tied with the last: a cut never falls inside a tie). Every other candidate
keeps ``(1 - NB_WEIGHT) x score``: it stays below all of them, in its order. A document whose words resemble
none of the others gets only the first part. The full-text channel hands fusion at least ``NB_DOCS`` hits
whatever the ``--limit``, so the first N results of a query are those of any larger limit.

A document's words are those of its title and the opening of its body (``NB_MAX_CHARS``, what says what the
document is about; its cost grows with the words read: 14.5 ms a question in a cold process for 20,000 characters
of 10,000 ``bench/scale.py`` documents of 5,700 characters on average, 8.3 ms for 3,000, whose Cranfield and CISI
figures moved by 0.001-0.002 only): words of 3+ letters,
stopwords left out, inflections counted together (the crude stem of :mod:`.feedback`). Each weighs
``(1 + ln tf) x ln(1 + n / df)`` with ``df`` counted among the ``n`` documents compared (no collection
statistics are needed, so both engines give the same scores), only a document's ``NB_TERMS`` heaviest words are
kept, and ``sim`` is the cosine of those vectors.

Used by full text and hybrid without vectors (``kbindex query``'s default on a knowledge base without vectors)
on knowledge bases of at least ``NB_MIN_DOCS`` documents (as :mod:`.feedback`: on a small one the best matches
are a large share of everything); not by keyword or exact-identifier matching, and not when vectors rank (vector
feedback, :mod:`.semantic`, does the same with the documents' vectors).

Tuned on Cranfield only (nDCG@10 x bm25s; the default before it: 1.007), re-ranking the default query's 100
results offline, grid NB_DOCS 20-100, NB_NEIGHBOURS 3-10, NB_WEIGHT 0.3-0.6: the gain is broad (1.03-1.12 over
the grid). Kept: 50 documents, 5 neighbours, weight 0.4, 40 words (20 words: 1.068, 40: 1.095, 80: 1.091); the
Cranfield-best point (50, 3, 0.5: 1.115) was left for a less steep one. Through ``kbindex query`` the kept
setting gives 1.081. The held-out collections were looked
at during the grid (docs/search.md gives them measured through ``kbindex query``).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from kb_indexer.search.feedback import WORD, stems
from kb_indexer.search.pool import select
from kb_indexer.search.terms import STOPWORDS
from kb_indexer.store import fulltext as store
from kb_indexer.store.dbapi import Connection

NB_DOCS = 50            # best candidates compared with one another
NB_NEIGHBOURS = 5       # most similar of them that count for each
NB_WEIGHT = 0.4         # share of the score that comes from the neighbours
NB_TERMS = 40           # heaviest words kept of each document
NB_MIN_DOCS = 500       # smaller knowledge bases: not used
NB_TIED_MAX = 4 * NB_DOCS   # more documents tied for the best NB_DOCS (copies of one text): not used
NB_MAX_CHARS = 3_000    # characters of a document's body read for its words (its opening: see the docstring)
# Also when vectors rank (after vector feedback): off. bench/ir_eval.py --embed local --neighbours
# default,withvectors (all-MiniLM-L6-v2), hybrid nDCG@10 x bm25s without vs with: Cranfield 1.171 vs 1.200,
# held-out CISI 1.156 vs 1.148 and CACM 1.121 vs 1.086.
NB_WITH_VECTORS = False


@dataclass
class Neighbourhood:
    """What regularisation did: the documents compared, and each one's part from its neighbours (a part of its
    relevance score: regularisation comes last)."""

    documents: int = 0
    parts: dict[int, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, float | int]:
        return {"documents": self.documents, "neighbours": NB_NEIGHBOURS, "weight": NB_WEIGHT,
                "words": NB_TERMS}


def regularise(conn: Connection, scores: dict[int, float]) -> Neighbourhood | None:
    """Move the best scores towards their neighbours' (in place; see the module docstring). None when there
    are too few candidates to have neighbours, or too many tie for the last place (``NB_TIED_MAX``)."""
    best = select(scores, NB_DOCS)   # the best NB_DOCS and every score tied with the last: no cut inside a tie
    if len(best) <= NB_NEIGHBOURS or len(best) > NB_TIED_MAX:
        return None
    texts = store.heads(conn, best, NB_MAX_CHARS)
    # best first, ties by path (as results are): the order decides between equally similar neighbours
    texts.sort(key=lambda t: (-scores[t[0]], t[1]))
    top = [scores[t[0]] for t in texts]
    sims = _similarities(_bags(texts))
    keep = 1.0 - NB_WEIGHT
    for d in scores:
        scores[d] *= keep
    out = Neighbourhood(documents=len(texts))
    for (d, *_), row in zip(texts, sims):
        near = heapq.nlargest(NB_NEIGHBOURS, range(len(row)), key=row.__getitem__)   # ties: the better ranked
        mass = sum(row[j] for j in near)
        part = NB_WEIGHT * sum(row[j] * top[j] for j in near) / mass if mass > 0 else 0.0
        scores[d] += part
        out.parts[d] = part
    return out


def _bags(texts: list[tuple[int, str, str, str]]) -> list[dict[str, float]]:
    """Each document's words with their tf weight ``1 + ln tf`` (of its title and the opening of its body,
    ``texts`` as :func:`kb_indexer.store.fulltext.heads` gives them), kept per process for the next question
    (by that text itself: an edit, a rename or another knowledge base gives another text). The words no
    earlier bag stemmed are stemmed together, in one pass."""
    global _BAGS_WORDS
    keys = [(title, head) for _, _, title, head in texts]
    words = {key: _words(f"{key[0]}\n{key[1]}") for key in keys if key not in _BAGS}
    _learn_stems(set().union(*words.values()))
    made = {key: _bag(found) for key, found in words.items()}
    out = [made[key] if key in made else _BAGS[key] for key in keys]
    for key, bag in made.items():
        if _BAGS_WORDS + len(bag) > _BAGS_MAX_WORDS:
            _BAGS.clear()
            _BAGS_WORDS = 0
        _BAGS[key] = bag
        _BAGS_WORDS += len(bag)
    return out


_BAGS: dict[tuple[str, str], dict[str, float]] = {}
_BAGS_WORDS = 0               # words held by _BAGS (beside at most 3,000 characters of text each)
_BAGS_MAX_WORDS = 250_000     # about 25 MB: then it starts again


def _words(text: str) -> list[str]:
    """A document's words of 3+ letters, lower case, in order."""
    text = text.lower()
    return (_ASCII_WORD if text.isascii() else WORD).findall(text)


def _learn_stems(words: set[str]) -> None:
    """Stem the words not stemmed yet ("": a stopword), all at once."""
    new = [w for w in words if w not in _STEMS]
    if len(_STEMS) + len(new) >= _STEMS_MAX:
        _STEMS.clear()
        new = list(words)
    _STEMS.update(zip(new, stems(new)))
    _STEMS.update((w, "") for w in new if w in STOPWORDS)


def _bag(words: list[str]) -> dict[str, float]:
    """A document's content words (stemmed: see ``_learn_stems``) with their tf weight ``1 + ln tf``."""
    counts = Counter(map(_STEMS.__getitem__, words))
    counts.pop("", None)
    return {w: 1.0 + math.log(tf) for w, tf in counts.items()}


_ASCII_WORD = re.compile(r"[a-z]{3,}")   # WORD's matches in lower-case ASCII text, found twice as fast
_STEMS: dict[str, str] = {}   # word -> its stem ("": a stopword); the words of a knowledge base recur
_STEMS_MAX = 1 << 17


def _similarities(bags: list[dict[str, float]]) -> list[list[float]]:
    """The cosine of every pair of documents (``sims[i][j]``; 0 on the diagonal), over each one's
    ``NB_TERMS`` heaviest words: their tf weight (``bags``) x ln(1 + n / df) among these ``n`` documents."""
    n = len(bags)
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    idf = [0.0] + [math.log(1.0 + n / k) for k in range(1, n + 1)]
    index: defaultdict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, bag in enumerate(bags):
        # (minus the weight, word): sorted, the heaviest come first, ties by word
        weights = sorted([(-x * idf[df[w]], w) for w, x in bag.items()])
        del weights[NB_TERMS:]
        norm = math.sqrt(sum(x * x for x, _ in weights)) or 1.0
        for x, w in weights:
            if df[w] > 1:   # a word of one document adds to its norm only
                index[w].append((i, -x / norm))
    sims = [[0.0] * n for _ in bags]
    for postings in index.values():
        for a, (i, x) in enumerate(postings):
            row = sims[i]
            for j, y in postings[a + 1:]:
                p = x * y
                row[j] += p
                sims[j][i] += p
    return sims
