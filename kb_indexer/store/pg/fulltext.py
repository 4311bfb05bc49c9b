"""The full-text index on PostgreSQL: FTS5's tokens and FTS5's bm25, from the index's own statistics.

PostgreSQL's ``ts_rank`` is not BM25 and ranks worse (issue 29: 0.89x and 0.58x bm25s nDCG@10), so the
engine keeps what bm25 needs itself and scores with the one formula of :mod:`kb_indexer.store.sparse`:

* ``documents_text``: a document's title, summary, keywords text and body (the four columns of SQLite's
  ``documents_fts``), its ``tokens`` (each column's tokens in order, a line per column: see ``_token_lines``)
  and its ``length`` (tokens over all columns: bm25's D);
* ``text_postings``: per (token, document), the token's occurrences in each column and the document's
  length (written with them, so a query reads no other table); the weighted frequency (Σ column weight ×
  occurrences) is taken at query time, so any column weights rank exactly as FTS5 would;
* ``text_totals``: documents and tokens (N and avgdl), and a ``generation`` every write bumps.

Statement triggers on ``documents_text`` keep the totals and remove a document's postings in the transaction
that writes or deletes its row (deleting a document cascades to its row; postings carry no foreign key:
checking one per posting doubled the time of a bulk write).

A search asks for the same scores several times (the matches counted, the best ones, the scores of documents
found another way): scores read outside a transaction are kept per question (``_CACHE``) and used again
while the generation is the one they were read at; so are a phrase's postings (``_PHRASES``), which other
questions share (a known keyword is a phrase) and which are most of a question's server time.

Tokens are exactly ``documents_fts``'s (``porter unicode61 remove_diacritics 2``): SQLite's own tokenizer
(:class:`kb_indexer.store.fts_tokens.Tokenizer`) on a private in-memory database. A term of several tokens
is a phrase, as in FTS5: its documents are found among those holding its rarest token by looking for its
tokens in a row in their token lines (``strpos`` on the server), and its occurrences counted per column.
Functions take the raw psycopg connection (``%s`` placeholders) and run inside the caller's transaction when
there is one.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Sequence

import numpy as np

from kb_indexer.store.fts_tokens import Tokenizer
from kb_indexer.store.pg.fulltext_schema import SCHEMA, create_schema  # noqa: F401  (callers create it here too)
from kb_indexer.store.sparse import COLUMN_WEIGHTS, bm25_idf, bm25_norm, bm25_part

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


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _token_lines(rows: Sequence[Sequence[Any]]) -> list[str]:
    """Each row's tokens as text: per column ``" tok tok … "`` (a space before and after every token), the four
    columns on four lines, so ``" a b "`` occurs exactly where the phrase ``a b`` does (never across columns:
    a token holds no space or newline)."""
    tok = tokenizer()
    ids = tok.column_ids([r[k] or "" for r in rows for k in range(1, 5)])
    names = np.asarray(tok.names, dtype=object)
    lines = [" " + " ".join(names[a].tolist()) + " " if len(a) else " " for a in ids]
    return ["\n".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]


def _postings(rows: Sequence[Sequence[Any]]) -> tuple[list[int], str]:
    """(each row's length, the postings of full-text rows as COPY text: a line per (token, document) with the
    token, the document id, its occurrences per column and the document's length, sorted by token)."""
    tok = tokenizer()
    (d, c, t, n), _ = tok.count([[r[k] or "" for k in range(1, 5)] for r in rows])
    names = tok.names
    lengths = np.bincount(d, weights=n, minlength=len(rows)).astype(np.int64).tolist()
    key = t * len(rows) + d                      # sorted by token, then document (then column)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
    counts = np.zeros((len(starts), 4), dtype=np.int64)
    counts[np.cumsum(np.r_[False, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64), c] = n
    ids = [int(r[0]) for r in rows]
    terms = {tid: names[tid].translate(_COPY_ESCAPES) for tid in set(t[starts].tolist())}
    lines = [f"{terms[tid]}\t{ids[doc]}\t{a}\t{b}\t{c}\t{e}\t{lengths[doc]}\n" for tid, doc, (a, b, c, e) in
             zip(t[starts].tolist(), d[starts].tolist(), counts.tolist())]
    return lengths, "".join(sorted(lines))   # in key order: the primary key grows at its end (faster COPY)


def _clean(text: str | None) -> str:
    return (text or "").replace("\x00", " ")   # PostgreSQL text holds no NUL (a separator for FTS5 as well)


def write_rows(raw: Any, rows: Sequence[Sequence[Any]]) -> None:
    """(Re)write documents' rows ``(id, title, summary, keywords, body)`` with their postings; the totals
    follow in the same transaction (triggers)."""
    if not rows:
        return
    lengths, postings = _postings(rows)
    token_lines = _token_lines(rows)
    with _snapshot(raw, write=True):
        raw.execute("DELETE FROM documents_text WHERE document_id = ANY(%s)", ([int(r[0]) for r in rows],))
        with raw.cursor() as cur:
            with cur.copy("COPY documents_text (document_id, title, summary, keywords, body, tokens, length) "
                          "FROM STDIN") as copy:
                for r, lines, length in zip(rows, token_lines, lengths):
                    copy.write_row((int(r[0]), *(_clean(r[k]) for k in range(1, 5)), lines, length))
            with cur.copy("COPY text_postings (term, document_id, n_title, n_summary, n_keywords, n_body, "
                          "length) FROM STDIN") as copy:
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


# The totals (first row, term NULL: documents, generation, tokens) and the postings of the tokens (%s), in one
# statement: one snapshot.
#: The totals, then per token its postings as arrays in document order (one row per token, read in binary:
#: a row per posting cost the client 3x the CPU to take apart, ~6 of a question's ~18 ms at 20,000 documents).
_POSTINGS = ("SELECT NULL::text, ARRAY[documents, generation, tokens], NULL::int[], NULL::int[], NULL::int[], "
             "NULL::int[], NULL::int[] FROM text_totals WHERE id = 1 UNION ALL (SELECT term, " + ", ".join(
                 f"array_agg({c} ORDER BY document_id)" for c in (
                     "document_id", "n_title", "n_summary", "n_keywords", "n_body", "length")) +
             " FROM text_postings WHERE term = ANY(%s) GROUP BY term ORDER BY term)")


def _token_postings(cur: Any) -> tuple[int, int, int, dict[str, tuple[Any, Any, Any]]]:
    """(documents, tokens, generation, ``{token: (document ids, occurrences per column (n × 4), document
    lengths)}``) from the cursor of :data:`_POSTINGS`."""
    head, *rows = cur.fetchall()
    documents, generation, tokens = head[1]
    out: dict[str, tuple[Any, Any, Any]] = {}
    for term, ids, *columns, lengths in rows:
        out[term] = (np.asarray(ids, dtype=np.int64), np.asarray(columns, dtype=np.int64).T,
                     np.asarray(lengths, dtype=np.int64))
    return documents, tokens, generation, out


def _send_phrase(raw: Any, phrase: tuple[str, ...]) -> Any:
    """The cursor of the documents holding ``phrase`` (its tokens in a row in one column): among those with
    all its tokens, the ones whose token lines hold it. One statement (a phrase with a token no document has
    matches none)."""
    tokens = sorted(set(phrase))
    return raw.execute(
        # the documents holding every token of the phrase (their postings grouped by document: one pass over
        # the postings' primary key, where a count per posting of the rarest token cost a lookup each: 19 ->
        # 3 ms server time for two tokens of ~4,800 documents each at 20,000 synthetic documents), and only
        # their token lines searched with strpos (ANY of an ARRAY keeps the planner from scanning every
        # document's token lines: 320 ms at 20,000 documents against 0.1 ms)
        "SELECT t.document_id, t.tokens, t.length FROM documents_text t WHERE t.document_id = "
        "ANY(ARRAY(SELECT document_id FROM text_postings WHERE term = ANY(%(t)s) GROUP BY document_id "
        "HAVING count(*) = %(n)s)) AND strpos(t.tokens, %(p)s) > 0",
        {"t": tokens, "n": len(tokens), "p": " " + " ".join(phrase) + " "})


def _phrase_postings(cur: Any, phrase: tuple[str, ...]) -> tuple[Any, Any, Any]:
    """(document ids, phrase occurrences per column, lengths) from the cursor of :func:`_send_phrase`."""
    rows = cur.fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros((0, 4), np.int64), np.zeros(0, np.int64)
    pattern = " " + " ".join(phrase) + " "
    count = _occurrences(phrase, pattern)
    counts = np.asarray([[count(line) for line in r[1].split("\n")] for r in rows], np.int64)
    return (np.asarray([r[0] for r in rows], np.int64), counts.reshape(-1, 4),
            np.asarray([r[2] for r in rows], np.int64))


def _occurrences(phrase: tuple[str, ...], pattern: str) -> Any:
    """A function counting ``pattern`` (``phrase`` as a token line holds it) in a line, overlapping occurrences
    too, as in FTS5 (``a b a`` twice in ``a b a b a``). Occurrences overlap only where the phrase starts as it
    ends; otherwise ``str.count`` (non-overlapping, in C) gives the same count, several times faster, on the
    line with its spaces doubled (two occurrences in a row share no space there)."""
    if any(phrase[:k] == phrase[-k:] for k in range(1, len(phrase))):
        find = re.compile("(?=" + re.escape(pattern) + ")")
        return lambda line: len(find.findall(line))
    spaced = " " + "  ".join(phrase) + " "
    return lambda line: line.replace(" ", "  ").count(spaced)


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
    """Drop every remembered score and phrase (a benchmark times a question asked for the first time)."""
    _CACHE.clear()
    _PHRASES.clear()


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


def _read_postings(raw: Any, tokens: list[str], phrases: list[tuple[str, ...]]) -> tuple[Any, list[Any]]:
    """The cursors of the totals with the tokens' postings, and of each phrase's documents: one statement, or,
    with phrases, all of them in one snapshot (a REPEATABLE READ transaction unless the caller has one open),
    sent together and waited for once (psycopg's pipeline mode: one round trip)."""
    if not phrases:
        return raw.execute(_POSTINGS, (tokens,), binary=True), []   # a statement alone is one snapshot
    own = raw.info.transaction_status == 0   # pq.TransactionStatus.IDLE: no transaction of the caller's
    try:
        with raw.pipeline():
            if own:
                raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            out = raw.execute(_POSTINGS, (tokens,), binary=True), [_send_phrase(raw, t) for t in phrases]
            if own:
                raw.execute("COMMIT")
    except BaseException:
        if own and not raw.broken and raw.info.transaction_status != 0:
            raw.execute("ROLLBACK")   # an error inside the pipeline leaves the transaction open
        raise
    return out


_PHRASES: dict[tuple[Any, ...], tuple[int, tuple[Any, Any, Any]]] = {}   # (server, db, phrase) -> (generation, postings)
_PHRASES_MAX = 512


def _read(raw: Any, singles: list[str], phrased: list[tuple[str, ...]]) -> tuple[Any, dict[Any, Any]]:
    """(:func:`_token_postings` of the totals with the single tokens' postings, each phrase's postings), at one
    snapshot. Outside a transaction a phrase's postings are kept per process (``_PHRASES``) and used again
    while the generation read with the totals is the one they were read at (questions share phrases: a known
    keyword is one, and finding a phrase's documents is most of a question's server time); when one is older,
    everything is read again at one snapshot."""
    if raw.info.transaction_status != 0:   # not IDLE: inside a transaction (its writes may yet roll back)
        singles_cur, curs = _read_postings(raw, singles, phrased)
        return _token_postings(singles_cur), {t: _phrase_postings(cur, t) for t, cur in zip(phrased, curs)}
    where = (raw.info.host, raw.info.port, raw.info.dbname)
    kept = {t: hit for t in phrased if (hit := _PHRASES.get(where + (t,))) is not None}
    fresh = [t for t in phrased if t not in kept]
    singles_cur, curs = _read_postings(raw, singles, fresh)
    totals = _token_postings(singles_cur)
    if any(hit[0] != totals[2] for hit in kept.values()):   # written since: all again, at one snapshot
        kept, fresh = {}, phrased
        singles_cur, curs = _read_postings(raw, singles, fresh)
        totals = _token_postings(singles_cur)
    out = {t: hit[1] for t, hit in kept.items()}
    for t, cur in zip(fresh, curs):
        out[t] = found = _phrase_postings(cur, t)
        for array in found:
            array.setflags(write=False)
        if len(_PHRASES) >= _PHRASES_MAX:
            _PHRASES.clear()
        _PHRASES[where + (t,)] = (totals[2], found)
    return totals, out


def _compute(raw: Any, toks: list[tuple[str, ...]], weights: Sequence[float]) -> tuple[int, Any, Any]:
    """(the generation read at, document ids ascending, their bm25)."""
    phrased = sorted({t for t in toks if len(t) > 1})
    (documents, total, generation, singles), phrases = _read(raw, sorted({t[0] for t in toks if len(t) == 1}),
                                                             phrased)
    none = generation, np.zeros(0, np.int64), np.zeros(0, np.float64)
    if not documents:
        return none
    w = np.asarray(list(weights)[:4] + [1.0] * (4 - len(weights[:4])), dtype=np.float64)
    avgdl = total / documents
    parts = []
    for tok in toks:
        found = (singles.get(tok[0]) if len(tok) == 1 else phrases[tok]) if tok else None
        if found is None or not len(found[0]):
            continue
        docs, counts, lengths = found
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
