"""The full-text index on PostgreSQL: FTS5's tokens and FTS5's bm25, from the index's own statistics.

PostgreSQL's ``ts_rank`` is not BM25 and ranks worse (Cranfield nDCG@10 0.30, FTS5's bm25 0.37:
bench/pg_fulltext.py), so the engine keeps what bm25 needs itself and scores with the one formula of
:mod:`kb_indexer.store.sparse`:

* ``documents_text``: a document's title, summary, keywords text and body (the four columns of SQLite's
  ``documents_fts``) and its ``length`` (tokens over all columns: bm25's D);
* ``text_postings``: per (token, document), the token's occurrences in each column, the document's length
  (written with them, so a query reads no other table) and the token's positions (column and place in it:
  see ``fulltext_schema.POSITION_BITS``); the weighted frequency (Σ column weight × occurrences) is taken at
  query time, so any column weights rank exactly as FTS5 would;
* ``text_totals``: documents and tokens (N and avgdl), and a ``generation`` every write bumps.

Statement triggers on ``documents_text`` keep the totals and remove a document's postings in the transaction
that writes or deletes its row (deleting a document cascades to its row; postings carry no foreign key:
checking one per posting doubled the time of a bulk write).

A search asks for the same scores several times (the matches counted, the best ones, the scores of documents
found another way): scores read outside a transaction are kept per question (``_CACHE``) and used again
while the generation is the one they were read at.

Tokens are exactly ``documents_fts``'s (``porter unicode61 remove_diacritics 2``): SQLite's own tokenizer
(:class:`kb_indexer.store.fts_tokens.Tokenizer`) on a private in-memory database. A term of several tokens
is a phrase, as in FTS5: it occurs where its tokens' positions follow one another in one column, found from
its tokens' postings read with the question's (one statement), and its occurrences counted per column.
Functions take the raw psycopg connection (``%s`` placeholders) and run inside the caller's transaction when
there is one.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Sequence

import numpy as np

from kb_indexer.store.fts_tokens import Tokenizer
from kb_indexer.store.pg.fulltext_schema import COPY_ESCAPES, POSITION_BITS, create_schema  # noqa: F401  (callers create it here too)
from kb_indexer.store.bm25 import COLUMN_WEIGHTS, bm25_idf, bm25_norm, bm25_part

COLUMNS = ("title", "summary", "keywords", "body")


# -- tokens --------------------------------------------------------------------------------------------

_LOCAL = threading.local()


def tokenizer() -> Tokenizer:
    """This thread's tokenizer: SQLite's FTS5 tokenizer on an in-memory database, its cache kept."""
    tok: Tokenizer | None = getattr(_LOCAL, "tokenizer", None)
    if tok is None:
        tok = _LOCAL.tokenizer = Tokenizer(sqlite3.connect(":memory:"))
    return tok


def _tokens(terms: Sequence[str]) -> list[tuple[str, ...]]:
    return tokenizer().tokens(terms)


@contextmanager
def _snapshot(raw: Any, write: bool = True) -> Iterator[None]:
    """One write transaction, unless the caller already has one open (a read's snapshot: see
    :func:`_read_postings`)."""
    if raw.info.transaction_status != 0:   # pq.TransactionStatus.IDLE: the caller's transaction
        yield
        return
    with raw.transaction():
        yield


# -- writing -------------------------------------------------------------------------------------------


def _postings(rows: Sequence[Sequence[Any]]) -> tuple[list[int], str]:
    """(each row's length, the postings of full-text rows as COPY text: a line per (token, document) with the
    token, the document id, its occurrences per column, the document's length and its positions (codes of
    ``fulltext_schema.POSITION_BITS``, little-endian uint32, ascending), sorted by token; m004's
    ``fulltext_schema._postings_of`` writes the same lines from token lines)."""
    tok = tokenizer()
    per_column = tok.column_ids([r[k] or "" for r in rows for k in range(1, 5)])
    sizes = np.asarray([len(a) for a in per_column], dtype=np.int64)
    t = np.concatenate(per_column) if per_column else np.zeros(0, np.int64)
    where = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)    # (row, column) of each token
    d, c = np.divmod(where, 4)
    code = (c << POSITION_BITS) | (np.arange(len(t), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes))
    lengths = np.bincount(d, minlength=len(rows)).astype(np.int64).tolist()
    order = np.lexsort((code, d, t))           # by token, then document, then position
    t, d, c, code = t[order], d[order], c[order], code[order]
    new = np.r_[True, (t[1:] != t[:-1]) | (d[1:] != d[:-1])] if len(t) else np.zeros(0, bool)
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    counts = np.zeros((len(starts), 4), dtype=np.int64)
    np.add.at(counts, (group, c), 1)
    packed = code.astype("<u4").tobytes().hex()
    bounds = np.r_[starts, len(t)].tolist()
    ids = [int(r[0]) for r in rows]
    names = tok.names
    terms = {tid: names[tid].translate(COPY_ESCAPES) for tid in set(t[starts].tolist())}
    lines = [f"{terms[tid]}\t{ids[doc]}\t{a}\t{b}\t{cc}\t{e}\t{lengths[doc]}\t\\\\x{packed[8 * lo:8 * hi]}\n"
             for tid, doc, (a, b, cc, e), lo, hi in
             zip(t[starts].tolist(), d[starts].tolist(), counts.tolist(), bounds[:-1], bounds[1:])]
    return lengths, "".join(sorted(lines))   # in key order: the primary key grows at its end (faster COPY)


def _clean(text: str | None) -> str:
    return (text or "").replace("\x00", " ")   # PostgreSQL text holds no NUL (a separator for FTS5 as well)


def write_rows(raw: Any, rows: Sequence[Sequence[Any]]) -> None:
    """(Re)write documents' rows ``(id, title, summary, keywords, body)`` with their postings; the totals
    follow in the same transaction (triggers)."""
    if not rows:
        return
    lengths, postings = _postings(rows)
    with _snapshot(raw, write=True):
        raw.execute("DELETE FROM documents_text WHERE document_id = ANY(%s)", ([int(r[0]) for r in rows],))
        with raw.cursor() as cur:
            with cur.copy("COPY documents_text (document_id, title, summary, keywords, body, length) "
                          "FROM STDIN") as copy:
                for r, length in zip(rows, lengths):
                    copy.write_row((int(r[0]), *(_clean(r[k]) for k in range(1, 5)), length))
            with cur.copy("COPY text_postings (term, document_id, n_title, n_summary, n_keywords, n_body, "
                          "length, positions) FROM STDIN") as copy:
                copy.write(postings)


def delete_rows(raw: Any, doc_ids: list[int]) -> None:
    with _snapshot(raw, write=True):
        raw.execute("DELETE FROM documents_text WHERE document_id = ANY(%s)", (list(doc_ids),))


def clear(raw: Any) -> None:
    with _snapshot(raw, write=True):
        raw.execute("DELETE FROM documents_text")


# -- reading -------------------------------------------------------------------------------------------


def bodies(raw: Any, doc_ids: list[int]) -> dict[int, str]:
    rows = raw.execute("SELECT document_id, body FROM documents_text WHERE document_id = ANY(%s)",
                       (list(doc_ids),)).fetchall()
    return {int(d): b for d, b in rows}


def heads(raw: Any, doc_ids: list[int], max_chars: int) -> list[tuple[int, str, str, str]]:
    return [(int(r[0]), r[1], r[2], r[3]) for r in raw.execute(
        "SELECT d.id, d.filepath, coalesce(d.title, ''), left(coalesce(t.body, ''), %s) FROM documents d "
        "LEFT JOIN documents_text t ON t.document_id = d.id WHERE d.id = ANY(%s)", (max_chars, list(doc_ids)))]


def titled_texts(raw: Any, every: int = 1) -> list[tuple[str, str, str]]:
    return [tuple(r) for r in raw.execute(
        "SELECT d.filepath, t.title, t.body FROM documents d JOIN documents_text t ON t.document_id = d.id "
        "WHERE d.id %% %s = 0", (every,)).fetchall()]


def existing(raw: Any, doc_ids: list[int]) -> list[int]:
    """Those of ``doc_ids`` that are documents."""
    return [int(r[0]) for r in raw.execute("SELECT id FROM documents WHERE id = ANY(%s)", (list(doc_ids),))]


def count_matching(raw: Any, terms: Sequence[str], cap: int | None = None) -> int:
    toks = _tokens(terms)
    if len(toks) == 1 and len(toks[0]) == 1:   # one token: counted on the index, stopping at the cap
        sql = "SELECT count(*) FROM (SELECT 1 FROM text_postings WHERE term = %s LIMIT %s) x"
        return int(raw.execute(sql, (toks[0][0], cap)).fetchone()[0])
    found = len(matching(raw, terms))
    return found if cap is None else min(found, cap)


def count_each(raw: Any, term_lists: Sequence[Sequence[str]], cap: int) -> list[int]:
    """``count_matching`` of each term list with ``cap``; those of one token all in one statement."""
    toks = [_tokens(terms) for terms in term_lists]
    single = sorted({t[0][0] for t in toks if len(t) == 1 and len(t[0]) == 1})
    counted: dict[str, int] = {}
    if single:
        sql = ("SELECT w, (SELECT count(*) FROM (SELECT 1 FROM text_postings WHERE term = w LIMIT %s) x) "
               "FROM unnest(%s::text[]) AS u(w)")
        counted = {str(w): int(n) for w, n in raw.execute(sql, (cap, single))}
    return [counted[t[0][0]] if len(t) == 1 and len(t[0]) == 1 else count_matching(raw, terms, cap)
            for t, terms in zip(toks, term_lists)]


def matching(raw: Any, terms: Sequence[str]) -> list[int]:
    """Ids of the documents matching any of ``terms``. Which documents match does not depend on the column
    weights, so this reads the scores a query made with the default ones (cached) instead of scoring again."""
    return [int(d) for d in _scores(raw, terms, COLUMN_WEIGHTS)[0].tolist()]


# -- ranking -------------------------------------------------------------------------------------------


_AGG = "array_agg({} ORDER BY document_id)"

#: The totals (first row, term NULL: documents, generation, tokens), then per single token (phrase NULL) its
#: postings as arrays in document order (one row per token, read in binary: a row per posting cost the client
#: 3x the CPU to take apart, ~6 of a question's ~18 ms at 20,000 documents).
_POSTINGS = ("SELECT NULL::text, NULL::int, ARRAY[documents, generation, tokens], NULL::int[], NULL::int[], "
             "NULL::int[], NULL::int[], NULL::int[], NULL::int[], NULL::bytea FROM text_totals WHERE id = 1 "
             "UNION ALL (SELECT term, NULL::int, " + ", ".join(_AGG.format(c) for c in (
                 "document_id", "n_title", "n_summary", "n_keywords", "n_body", "length")) +
             ", NULL::int[], NULL::bytea FROM text_postings WHERE term = ANY(%(t)s) GROUP BY term)")

#: Per token of phrase {k} (%(p{k})s, %(n{k})s distinct tokens), the documents holding all its tokens (found on
#: the postings' key) with their lengths and the token's positions there: each document's count and the codes
#: one after another. A phrase whose tokens are frequent but seldom in a row reads few postings this way.
_PHRASE = (" UNION ALL (SELECT term, {k}, " + _AGG.format("document_id") + ", NULL::int[], NULL::int[], "
           "NULL::int[], NULL::int[], " + _AGG.format("length") + ", " + _AGG.format("octet_length(positions) / 4") +
           ", string_agg(positions, ''::bytea ORDER BY document_id) FROM text_postings WHERE term = ANY(%(p{k})s) "
           "AND document_id = ANY(ARRAY(SELECT document_id FROM text_postings WHERE term = ANY(%(p{k})s) "
           "GROUP BY document_id HAVING count(*) = %(n{k})s)) GROUP BY term)")

_NONE = (np.zeros(0, np.int64), np.zeros((0, 4), np.int64), np.zeros(0, np.int64))


def _read(raw: Any, singles: list[str], phrased: list[tuple[str, ...]]) -> tuple[tuple[int, int, int], dict[Any, Any]]:
    """((documents, tokens, generation), ``{token or phrase: (document ids, occurrences per column (n × 4),
    document lengths)}``) for the single tokens and the phrases, read in one statement (one snapshot)."""
    params: dict[str, Any] = {"t": singles}
    for k, phrase in enumerate(phrased):
        params[f"p{k}"], params[f"n{k}"] = sorted(set(phrase)), len(set(phrase))
    sql = _POSTINGS + "".join(_PHRASE.format(k=k) for k in range(len(phrased)))
    # never prepared with phrases: a prepared statement's generic plan (PostgreSQL's choice after 5 runs) does
    # not know how few documents hold all of a phrase's tokens and intersects the postings' document index
    # (454,677 entries for one phrase: 72-92 ms against 16-25 ms); planned with its values each time it is not
    head, *rows = raw.execute(sql, params, binary=True, prepare=False if phrased else None).fetchall()
    documents, generation, tokens = head[2]
    out: dict[Any, Any] = {}
    places: list[dict[str, tuple[Any, Any, Any, Any]]] = [{} for _ in phrased]
    for term, k, ids, *columns, lengths, counts, codes in rows:
        ids, lengths = np.asarray(ids, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
        if k is None:
            out[term] = (ids, np.asarray(columns, dtype=np.int64).T, lengths)
        else:   # per occurrence: its row (document) and its position code, ascending
            places[k][term] = (ids, lengths, np.repeat(np.arange(len(ids), dtype=np.int64), counts),
                               np.frombuffer(codes, dtype="<u4").astype(np.int64))
    for phrase, its in zip(phrased, places):
        out[phrase] = _phrase(phrase, its)
    return (documents, tokens, generation), out


def _phrase(phrase: tuple[str, ...], places: dict[str, tuple[Any, Any, Any, Any]]) -> tuple[Any, Any, Any]:
    """(document ids, occurrences per column, lengths) of ``phrase``: where its tokens' positions follow one
    another in one column (each occurrence counts, overlapping ones too, as in FTS5). An occurrence is keyed
    by its document's place among the first token's documents (not by the id: any BIGINT) and its code."""
    if any(t not in places for t in phrase):
        return _NONE
    ids, lengths = places[phrase[0]][:2]

    def keys(token: str) -> Any:
        theirs, _, row, code = places[token]
        at = np.minimum(np.searchsorted(ids, theirs), max(len(ids) - 1, 0))
        known = (ids[at] == theirs) if len(ids) else np.zeros(len(theirs), bool)
        return ((at[row] << 32) | code)[known[row]]

    starts = keys(phrase[0])
    for k, token in enumerate(phrase[1:], 1):
        starts = np.intersect1d(starts, keys(token) - k, assume_unique=True)
    if not len(starts):
        return _NONE
    rows, at = np.unique(starts >> 32, return_inverse=True)
    counts = np.zeros((len(rows), 4), dtype=np.int64)
    np.add.at(counts, (at.ravel(), (starts >> POSITION_BITS) & 3), 1)
    return ids[rows], counts, lengths[rows]


def all_scores(raw: Any, terms: Sequence[str], weights: Sequence[float]) -> dict[int, float]:
    """bm25 of every document matching any of ``terms`` (FTS5's, see the module docstring)."""
    ids, scores = _scores(raw, terms, weights)
    return dict(zip(ids.tolist(), scores.tolist()))


def ranked(raw: Any, terms: Sequence[str], weights: Sequence[float], limit: int) -> list[tuple[int, float]]:
    """The best ``limit`` documents ``(id, bm25)``, best first (then by id)."""
    ids, scores = _scores(raw, terms, weights)
    order = np.lexsort((ids, -scores))[:max(0, limit)]
    return list(zip(ids[order].tolist(), scores[order].tolist()))


_CACHE: dict[tuple[Any, ...], tuple[int, Any, Any]] = {}   # (server, database, question) -> (generation, ids, scores)
_CACHE_MAX = 64


# Inside :func:`one_read` (one question): the scores already read, used again without asking the generation.
_ONE_READ: ContextVar[dict[tuple[Any, ...], tuple[Any, Any]] | None] = ContextVar("kbindex_pg_one_read", default=None)


@contextmanager
def one_read() -> Iterator[None]:
    """Every full-text read inside sees the scores of the first (one question's reads: one snapshot, and the
    second read costs no round trip to check that nothing was written meanwhile)."""
    token = _ONE_READ.set({})
    try:
        yield
    finally:
        _ONE_READ.reset(token)


def forget() -> None:
    """Drop every remembered score (a benchmark times a question asked for the first time)."""
    _CACHE.clear()


def _scores(raw: Any, terms: Sequence[str], weights: Sequence[float]) -> tuple[Any, Any]:
    """(document ids ascending, their bm25) of the documents matching any of ``terms``; again from
    ``_CACHE`` while nothing was written (only outside a transaction: its writes may yet roll back)."""
    toks = _tokens(terms)
    if not any(toks):
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    if raw.info.transaction_status != 0:   # not IDLE: inside a transaction
        return _compute(raw, toks, weights)[1:]
    key = (raw.info.host, raw.info.port, raw.info.dbname, tuple(toks), tuple(float(w) for w in weights))
    scope = _ONE_READ.get()
    if scope is not None and key in scope:
        return scope[key]
    ids, scores = _cached_scores(raw, key, toks, weights)
    if scope is not None:
        scope[key] = ids, scores
    return ids, scores


def _cached_scores(raw: Any, key: tuple[Any, ...], toks: list[tuple[str, ...]],
                   weights: Sequence[float]) -> tuple[Any, Any]:
    """The scores of ``key`` from ``_CACHE`` while its generation is the index's, else computed and kept."""
    hit = _CACHE.get(key)
    # a question asked again reads the generation alone; a new one reads it with the postings (one round trip)
    if hit is not None and hit[0] == raw.execute("SELECT generation FROM text_totals WHERE id = 1").fetchone()[0]:
        return hit[1], hit[2]
    generation, ids, scores = _compute(raw, toks, weights)   # the generation the postings were read at
    ids.setflags(write=False)
    scores.setflags(write=False)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    _CACHE[key] = (generation, ids, scores)
    return ids, scores


def _compute(raw: Any, toks: list[tuple[str, ...]], weights: Sequence[float]) -> tuple[int, Any, Any]:
    """(the generation read at, document ids ascending, their bm25)."""
    (documents, total, generation), found = _read(raw, sorted({t[0] for t in toks if len(t) == 1}),
                                                  sorted({t for t in toks if len(t) > 1}))
    none = generation, np.zeros(0, np.int64), np.zeros(0, np.float64)
    if not documents:
        return none
    w = np.asarray(list(weights)[:4] + [1.0] * (4 - len(weights[:4])), dtype=np.float64)
    avgdl = total / documents
    parts = []
    for tok in toks:
        postings = found.get(tok[0] if len(tok) == 1 else tok) if tok else None
        if postings is None or not len(postings[0]):
            continue
        docs, counts, lengths = postings
        parts.append((docs, bm25_part(bm25_idf(documents, len(docs)), counts @ w, bm25_norm(lengths, avgdl))))
    if not parts:
        return none
    ids, at = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
    scores = np.zeros(len(ids), dtype=np.float64)
    offset = 0
    for docs, part in parts:   # term by term, in query order: FTS5's order of summation
        np.add.at(scores, at[offset:offset + len(docs)], part)
        offset += len(docs)
    return generation, ids, scores
