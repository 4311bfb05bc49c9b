"""Full-text scores from the sparse index (:mod:`kb_indexer.store.sparse`): FTS5's bm25, computed with numpy.

For every matching document the score is what ``bm25(documents_fts, 2, 0.25, 2, 1)`` returns for the same
query, by the one formula in :mod:`kb_indexer.store.bm25` (``bm25_idf``, ``bm25_norm``, ``bm25_part``),
summed over the terms in query order (a repeated term counts again). A term of one token is scored from
the postings; a term of several tokens is a phrase, which only FTS5 can match: its part comes from FTS5
(bm25 is a sum over phrases, so a single-phrase pass gives exactly that phrase's part). ``View`` is None
whenever the index cannot vouch for the current rows (not built, or more changes since its last refresh
than a query reads itself, or on PostgreSQL): the caller then uses the store's full text.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Sequence

from kb_indexer.search.arrays import lookup
from kb_indexer.store import fulltext
from kb_indexer.store import bm25, sparse as store
from kb_indexer.store.connection import file_identity
from kb_indexer.store.fts_tokens import Pairs, Tokenizer
from kb_indexer.store.dbapi import Connection

K1, B, IDF_FLOOR = bm25.K1, bm25.B, bm25.IDF_FLOOR


@dataclass
class View:
    """The sparse index as of now for one query's terms: segments plus the documents changed since the
    last refresh, and which of the query's two-token phrases it indexes."""

    owner: Any                 # uint32 per document id: segment of its live postings (0: none or changed)
    lengths: Any               # float64 per document id: tokens over all columns
    documents: int             # N
    avgdl: float
    overlay: store.DocTerms    # changed documents, read from their rows now (with the query's pairs)
    tokenizer: Tokenizer
    terms: dict[str, tuple[str, ...]]   # the query's terms -> their tokens
    covered: set[str]          # two-token phrases answered from the index ("first second")
    pending: int = 0
    generation: int = -1       # the state's generation the view was opened on
    norm: Any = None           # per document: k1·(1 − b + b·D/avgdl), when the state's own lengths are used
    _postings: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """Each term's tokens (cached for the query)."""
        new = [t for t in dict.fromkeys(terms) if t not in self.terms]
        self.terms.update(zip(new, self.tokenizer.tokens(new)))
        return [self.terms[t] for t in terms]

    def postings(self, conn: Connection, tokens: list[str]) -> None:
        """Load the live postings of ``tokens`` (document ids int64, weighted frequencies float64)."""
        import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

        todo = [t for t in set(tokens) if t not in self._postings]
        if not todo:
            return
        rows = store.term_rows(conn, todo)
        for tok in todo:
            docs, freqs = [], []
            for seg, data in rows.get(tok, ()):
                d, f = store.unpack(data)   # (a document beyond owner: folded after this view was opened)
                keep = (self.owner[np.minimum(d, len(self.owner) - 1)] == seg) & (d < len(self.owner))
                docs.append(d[keep])
                freqs.append(f[keep])
            if self.overlay.length:
                d, f = self.overlay.term(tok, self.tokenizer._ids)
                docs.append(d.astype(np.uint32))
                freqs.append(f.astype(np.float32))
            d = np.concatenate(docs).astype(np.int64) if docs else np.zeros(0, dtype=np.int64)
            f = np.concatenate(freqs).astype(np.float64) if freqs else np.zeros(0)
            self._postings[tok] = (d, f)

    def df(self, conn: Connection, token: str) -> int:
        self.postings(conn, [token])
        return len(self._postings[token][0])

    def indexed(self, tokens: tuple[str, ...]) -> str | None:
        """The index's term for a query term's tokens: the token, a covered pair, or None (FTS5 must match it)."""
        if len(tokens) == 1:
            return tokens[0]
        name = " ".join(tokens)
        return name if len(tokens) == 2 and name in self.covered else None


@dataclass
class _Base:
    """The index's state as read from ``sparse_state``, with what every query derives from it."""

    fold_seq: int
    structure: bytes | None
    generation: int
    owner: Any              # uint32 per document id
    lengths: Any            # float64 per document id
    documents: int
    total: int
    _norm: Any = None
    _oldest: int | None = None

    def norm(self) -> Any:
        if self._norm is None:
            self._norm = bm25.bm25_norm(self.lengths, self.total / max(1, self.documents))
        return self._norm

    def oldest(self) -> int:
        if self._oldest is None:
            self._oldest = _oldest(self.owner)
        return self._oldest


# A long-lived process (the MCP server, chat) reads the state once per change of it: the key names the index
# file (path and inode) and the state's generation, which every write of the state bumps.
_BASES: dict[tuple[Any, ...], _Base] = {}


def _base(conn: Connection) -> _Base | None:
    import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

    head = store.head(conn)
    if head is None or head[0] != store.FORMAT:
        return None
    identity = file_identity(conn)
    key = (*identity, head[1]) if identity is not None else None
    if key is not None and key in _BASES:
        return _BASES[key]
    st = store.load_state(conn)
    if st is None:
        return None
    lengths = st.lengths.astype(np.float64)
    base = _Base(st.fold_seq, st.structure, head[1], st.owner, lengths, int(np.count_nonzero(st.owner)),
                 int(lengths.sum()))
    if key is not None:
        _BASES.clear()
        _BASES[key] = base
    return base


#: Postings up to which FTS5 answers a question in a process that has not loaded numpy sooner than the sparse
#: index does once numpy is loaded (~45 ms): the scores are the same either way. Set on bench/scale.py's
#: default corpus at 50,000 documents, cold query CPU per question, sparse index / FTS5: 22,000-27,000
#: postings 180-192 / 134-156 ms, 55,000 170 / 174, 80,000 191 / 179, 145,000 201 / 238.
FTS5_CHEAPER_POSTINGS = 60_000


def cheaper_on_fts5(conn: Connection, terms: tuple[str, ...], counted_up_to: int | None = None) -> bool:
    """Whether this process answers ``terms`` sooner on FTS5 than through the sparse index: numpy is not loaded
    yet (a cold ``kbindex query``) and the terms have few postings (``FTS5_CHEAPER_POSTINGS`` in all, those of
    replaced documents included: a phrase of two words by its own postings when the index keeps them, a longer
    one by its rarest word; ``counted_up_to``: where counting a single word stops on FTS5, as pruning does)."""
    if "numpy" in sys.modules or store.head(conn) is None:   # (no sparse index: PostgreSQL, or not built)
        return False
    toks = [t for t in fulltext.tokenizer(conn).tokens(terms) if t]
    wanted = sorted({t for tok in toks for t in tok} | {" ".join(tok) for tok in toks if len(tok) == 2})
    counts = dict(conn.execute("SELECT term, sum(length(data)) / 8 FROM sparse_postings WHERE term IN "
                               "(SELECT value FROM json_each(?)) GROUP BY term", (json.dumps(wanted),)).fetchall())
    cap = counted_up_to if counted_up_to is not None else 1 << 62
    postings = 0
    for tok in toks:
        if len(tok) == 1:
            postings += min(counts.get(tok[0], 0), cap)
        else:
            pair = counts.get(" ".join(tok)) if len(tok) == 2 else None
            postings += pair if pair is not None else min(counts.get(t, 0) for t in tok)
    return postings <= FTS5_CHEAPER_POSTINGS


def open_view(conn: Connection, column_weights: tuple[float, ...], terms: tuple[str, ...] = ()) -> View | None:
    """The sparse index if it is built for these column weights and agrees with FTS5 right now."""
    import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

    if tuple(float(w) for w in column_weights) != bm25.COLUMN_WEIGHTS:
        return None
    base = _base(conn)
    if base is None:
        return None
    pending: list[int] = []
    if base.structure is None or base.structure != store.structure(conn):
        pending = [r[0] for r in conn.execute("SELECT DISTINCT document_id FROM fulltext_log WHERE seq > ? LIMIT ?",
                                              (base.fold_seq, store.OVERLAY_MAX + 1))]
        if not pending or len(pending) > store.OVERLAY_MAX:
            return None
    tokenizer = fulltext.tokenizer(conn)   # this connection's: kept between questions
    tokens = dict(zip(terms, tokenizer.tokens(terms)))
    phrases = {t for t in tokens.values() if len(t) == 2}
    overlay = store.read_documents(conn, tokenizer, pending, Pairs(tokenizer, phrases) if phrases else None)
    owner, lengths, documents, total, norm = base.owner, base.lengths, base.documents, base.total, None
    if pending:
        size = max([len(owner)] + [d + 1 for d in pending])
        owner, lengths = np.zeros(size, dtype=np.uint32), np.zeros(size, dtype=np.float64)
        owner[:len(base.owner)], lengths[:len(base.lengths)] = base.owner, base.lengths
        idx = np.asarray(pending, dtype=np.int64)
        owner[idx] = 0
        lengths[idx] = [overlay.length.get(d, 0) for d in pending]
        documents, total = int(np.count_nonzero(owner)) + len(overlay.length), int(lengths.sum())
    if (documents, total) != store.fts_totals(conn) or not documents:
        return None
    if not pending:
        norm = base.norm()
    oldest = base.oldest() if not pending else _oldest(owner)
    return View(owner, lengths, documents, total / documents, overlay, tokenizer, tokens,
                _covered(conn, oldest, phrases), len(pending), base.generation, norm)


def still_current(conn: Connection, view: View) -> bool:
    """Whether no fold or merge committed since ``view`` was opened (a query reads the postings after
    checking the view: another process's sync may have changed them in between; then FTS5 answers)."""
    row = conn.execute("SELECT generation FROM sparse_state WHERE id = 1").fetchone()
    return row is not None and row[0] == view.generation


def _oldest(owner: Any) -> int:
    """The oldest segment holding a live document."""
    live = owner[owner > 0]
    return int(live.min()) if len(live) else 1 << 62


def _covered(conn: Connection, oldest: int, phrases: AbstractSet[tuple[str, ...]]) -> set[str]:
    """The phrases every live segment (from ``oldest`` on) indexed (see ``sparse_pairs``)."""
    if not phrases:
        return set()
    names = sorted(" ".join(p) for p in phrases)
    return {r[0] for r in conn.execute("SELECT pair FROM sparse_pairs WHERE pair IN (SELECT value FROM json_each(?)) "
                                       "AND since <= ?", (json.dumps(names), oldest))}


@dataclass
class Scores:
    """bm25 of every document the query matches."""

    docs: Any       # int64 document ids, ascending
    scores: Any     # float64, higher is better

    def __len__(self) -> int:
        return len(self.docs)

    def get(self, doc_ids: list[int]) -> dict[int, float]:
        return lookup(self.docs, self.scores, doc_ids)

    def best(self) -> float:
        return float(self.scores.max()) if len(self.scores) else 0.0

    def best_with_ties(self, n: int, exclude: set[int], margin: float) -> dict[int, float]:
        """The ``n`` best documents outside ``exclude`` plus any within ``margin`` of the n-th."""
        import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

        if n <= 0:
            return {}
        keep = ~np.isin(self.docs, np.fromiter(exclude, dtype=np.int64, count=len(exclude))) if exclude \
            else np.ones(len(self.docs), dtype=bool)
        docs, scores = self.docs[keep], self.scores[keep]
        if len(docs) > n:
            nth = np.partition(scores, len(scores) - n)[len(scores) - n]
            pick = scores >= nth - margin
            docs, scores = docs[pick], scores[pick]
        return {int(d): float(s) for d, s in zip(docs, scores)}


def score(conn: Connection, view: View, terms: tuple[str, ...], phrase_sql: str,
          weights: Sequence[float] | None = None) -> Scores:
    """bm25 of every document matching any of ``terms``; ``phrase_sql`` gives ``(rowid, -bm25)`` of the
    documents matching one phrase (a parameter: its string literal); ``weights``: each term's part is
    multiplied by its weight (None: all 1)."""
    import numpy as np  # lazy: numpy costs start-up time; vector/sparse reads only

    indexed = [view.indexed(t) if t else "" for t in view.tokens(terms)]
    view.postings(conn, [t for t in indexed if t])
    acc = np.zeros(len(view.owner), dtype=np.float64)
    hit = np.zeros(len(view.owner), dtype=bool)
    norm = view.norm if view.norm is not None else bm25.bm25_norm(view.lengths, view.avgdl)
    for term, name, w in zip(terms, indexed, weights if weights is not None else [1.0] * len(terms)):
        if name:
            d, f = view._postings[name]
            if not len(d):
                continue
            acc[d] += w * bm25.bm25_part(bm25.bm25_idf(view.documents, len(d)), f, norm[d])
            hit[d] = True
        elif name is None:   # a phrase the index does not hold: FTS5 matches and scores it
            rows = fulltext.phrase_scores(conn, phrase_sql, '"' + term.replace('"', '""') + '"')
            if rows:
                d = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                acc[d] += w * np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
                hit[d] = True
    docs = np.flatnonzero(hit)
    return Scores(docs, acc[docs])
