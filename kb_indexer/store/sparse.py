"""The sparse (inverted) index beside ``documents_fts``: BM25 over every matching document in milliseconds.

FTS5 ranks by calling ``bm25()`` once per matching row (about 1 µs each, even under ``ORDER BY rank
LIMIT``): a question whose words occur in 80,000 of 100,000 documents costs ~100 ms before anything
else. This index keeps, per term, the documents that contain it and their column-weighted term
frequencies as packed arrays, so a query scores all of them with numpy in one vector operation
(:mod:`kb_indexer.search.sparse`). It is derived from the full-text rows and never decides what a
query finds: the scores are FTS5's own bm25 (the same tokens, frequencies, lengths and formula), and
whenever the index cannot vouch for being current the query runs on FTS5 as before.

Layout (tables of migration ``m100_sparse``):

* ``sparse_postings``: one row per (term, segment); ``data`` is the segment's sorted document ids
  (uint32) followed by their weighted term frequencies (float32: Σ column weight × occurrences).
* ``sparse_segments``: a segment is written per batch of changed documents; a document's live
  postings are in the segment ``owner[id]`` names (older segments' postings of it are ignored), so an
  update never rewrites old segments. Many small segments are merged (postings only, no tokenising).
* ``sparse_state``: ``owner`` and ``lengths`` (tokens of each document, all columns) indexed by document
  id, the totals, ``fold_seq`` (the last ``fulltext_log`` entry folded in) and ``structure``: FTS5's
  structure record when the index became complete. Any write to FTS5 changes that record, so an equal
  one proves nothing changed; otherwise the documents logged since ``fold_seq`` are scored from their
  rows at query time (up to ``OVERLAY_MAX``), and the totals are checked against FTS5's own.

:func:`refresh` (run by ``sync``) folds logged changes in, in batches that each commit (a killed sync
keeps its progress), builds the whole index once a knowledge base reaches ``MIN_DOCS`` documents, and
clears the log of a smaller one. numpy is imported only here and in the query path that uses it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kb_indexer import settings
from kb_indexer.store.bm25 import COLUMN_WEIGHTS
from kb_indexer.store.connection import db_file, transaction
from kb_indexer.store.engines import engine_of
from kb_indexer.store.fts_tokens import Pairs, Tokenizer
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from concurrent.futures import Future

# Below this FTS5 ranks fast enough: no sparse index is kept (KBINDEX_SPARSE_MIN_DOCS). Its query path imports
# numpy (~50 ms in a cold process), which a 10,000-document query just wins back (bench/scale.py).
MIN_DOCS = 10_000
OVERLAY_MAX = 250         # changed documents a query scores from their rows (~0.3 ms each) before it uses FTS5
FOLD_DOCS = 8_000         # documents per segment (and per write transaction) when folding changes in
MAX_SEGMENTS = 16         # more than this: the smallest are merged until MERGED_SEGMENTS remain
MERGED_SEGMENTS = 8
MERGE_TERMS = 2_000       # terms merged at a time
FORMAT = json.dumps({"version": 1, "weights": COLUMN_WEIGHTS})

Progress = Callable[[int, int], None]


def head(conn: Connection) -> tuple[str, int] | None:
    """``(format, generation)`` of the index's state; None when there is none (none is kept on PostgreSQL,
    whose own postings rank every match: kb_indexer.store.pg.fulltext)."""
    if not engine_of(conn).sparse_index:
        return None
    try:
        row = conn.execute("SELECT format, generation FROM sparse_state WHERE id = 1").fetchone()
    except sqlite3.OperationalError:      # an index from before m100 opened read-only
        return None
    return (row[0], row[1]) if row is not None else None


def min_docs() -> int:
    """Documents from which the index is kept: ``KBINDEX_SPARSE_MIN_DOCS`` when set (0: always), else MIN_DOCS."""
    value = settings.text("KBINDEX_SPARSE_MIN_DOCS")
    return int(value) if value.isdigit() else MIN_DOCS


def structure(conn: Connection) -> bytes | None:
    """FTS5's structure record of ``documents_fts`` (changes with every write to the full-text index)."""
    row = conn.execute("SELECT block FROM documents_fts_data WHERE id = 10").fetchone()
    return bytes(row[0]) if row else None


def _varints(blob: bytes) -> list[int]:
    out, i = [], 0
    while i < len(blob):
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


def fts_totals(conn: Connection) -> tuple[int, int]:
    """FTS5's own row count and token count over all columns (its averages record)."""
    row = conn.execute("SELECT block FROM documents_fts_data WHERE id = 1").fetchone()
    values = _varints(bytes(row[0])) if row and row[0] else []
    return (values[0], sum(values[1:])) if values else (0, 0)


@dataclass
class State:
    fold_seq: int
    structure: bytes | None
    documents: int
    tokens: int
    owner: Any       # numpy uint32 per document id: segment of its live postings, 0 for none
    lengths: Any     # numpy uint32 per document id: tokens over all columns


def load_state(conn: Connection) -> State | None:
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    row = conn.execute("SELECT format, fold_seq, structure, documents, tokens, owner, lengths FROM sparse_state "
                       "WHERE id = 1").fetchone()
    if row is None or row[0] != FORMAT:
        return None
    return State(row[1], bytes(row[2]) if row[2] is not None else None, row[3], row[4],
                 np.frombuffer(row[5], dtype="<u4"), np.frombuffer(row[6], dtype="<u4"))


def _save_state(conn: Connection, st: State) -> None:
    conn.execute("INSERT INTO sparse_state (id, format, fold_seq, structure, documents, tokens, owner, lengths) "
                 "VALUES (1, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET format = excluded.format, "
                 "fold_seq = excluded.fold_seq, structure = excluded.structure, documents = excluded.documents, "
                 "tokens = excluded.tokens, owner = excluded.owner, lengths = excluded.lengths, "
                 "generation = sparse_state.generation + 1, updated_at = strftime('%Y-%m-%dT%H:%M:%S', 'now')",
                 (FORMAT, st.fold_seq, st.structure, st.documents, st.tokens,
                  st.owner.astype("<u4").tobytes(), st.lengths.astype("<u4").tobytes()))


# -- reading documents into postings ------------------------------------------------------------------


@dataclass
class DocTerms:
    """Postings of documents read from their full-text rows, sorted by (token id, document id)."""

    tids: Any                  # int32 token id per posting (``names`` maps it to the token)
    docs: Any                  # uint32 document id per posting
    tfs: Any                   # float32 Σ column weight × occurrences per posting
    length: dict[int, int]     # document id -> tokens over all columns (documents with a row only)
    names: list[str]

    def term(self, token: str, ids: dict[str, int]) -> tuple[Any, Any]:
        """(document ids, weighted frequencies) of one token."""
        tid = ids.get(token, -1)
        a, b = (int(x) for x in self.tids.searchsorted([tid, tid + 1])) if tid >= 0 else (0, 0)
        return self.docs[a:b], self.tfs[a:b]


READ_DOCS = 500   # documents tokenised at a time (bounds the memory of a fold)


def read_documents(conn: Connection, tokenizer: Tokenizer, doc_ids: list[int],
                   pairs: Pairs | None = None) -> DocTerms:
    """The full-text rows of ``doc_ids`` (those that still have one), tokenised like FTS5 does, with the
    occurrences of ``pairs`` as pseudo-tokens (not counted in the lengths). Read ``READ_DOCS`` at a time,
    each part reduced to its postings at once (the memory of a fold is its postings, not its texts)."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    parts: list[tuple[Any, Any, Any]] = []
    length: dict[int, int] = {}
    ordered = sorted(doc_ids)
    for start in range(0, len(ordered), READ_DOCS):
        rows = conn.execute("SELECT rowid, title, summary, keywords, body FROM documents_fts WHERE rowid IN "
                            "(SELECT value FROM json_each(?)) ORDER BY rowid",
                            (json.dumps(ordered[start:start + READ_DOCS]),)).fetchall()
        if rows:
            parts.append(_postings_of(tokenizer, rows, pairs, length))
    if not parts:
        return DocTerms(np.zeros(0, np.int32), np.zeros(0, np.uint32), np.zeros(0, np.float32), length,
                        tokenizer.names)
    tids = np.concatenate([p[0] for p in parts])
    order = np.argsort(tids, kind="stable")   # parts hold ascending documents: (token, document) order
    tids = tids[order]
    docs = np.concatenate([p[1] for p in parts])[order]
    tfs = np.concatenate([p[2] for p in parts])[order]
    return DocTerms(tids, docs, tfs, length, tokenizer.names)


def _postings_of(tokenizer: Tokenizer, rows: list[Any], pairs: Pairs | None,
                 length: dict[int, int]) -> tuple[Any, Any, Any]:
    """(token id int32, document id uint32, weighted frequency float32) of ``rows``, sorted by token then
    document; records each document's length in ``length``."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    (d, c, t, n), (pd, pc, pt) = tokenizer.count([list(r[1:5]) for r in rows], pairs)
    pair_order = np.lexsort((pd, pt))
    pd, pc, pt = pd[pair_order], pc[pair_order], pt[pair_order]
    ids = np.asarray([r[0] for r in rows], dtype=np.int64)
    length.update(zip(ids.tolist(), np.bincount(d, weights=n, minlength=len(rows)).astype(np.int64).tolist()))
    d, t = np.r_[d, pd], np.r_[t, pt]
    weighted = np.asarray(COLUMN_WEIGHTS)[np.r_[c, pc]] * np.r_[n, np.ones(len(pd), np.int64)]
    key = t * len(rows) + d
    order = np.argsort(key, kind="stable")   # the tokens come sorted, the pairs after them: two runs to merge
    key = key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
    return (t[order][starts].astype(np.int32), ids[d[order][starts]].astype(np.uint32),
            np.add.reduceat(weighted[order], starts).astype(np.float32) if len(key) else np.zeros(0, np.float32))


def _pack(docs: Any, tfs: Any) -> bytes:
    return bytes(docs.astype("<u4").tobytes() + tfs.astype("<f4").tobytes())


def unpack(data: bytes) -> tuple[Any, Any]:
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    n = len(data) // 8
    return np.frombuffer(data, dtype="<u4", count=n), np.frombuffer(data, dtype="<f4", count=n, offset=4 * n)


def _new_segment(conn: Connection, documents: int, postings: int) -> int:
    return int(conn.execute("INSERT INTO sparse_segments (documents, postings) VALUES (?, ?) RETURNING id",
                            (documents, postings)).fetchone()[0])


def _write_segment(conn: Connection, terms: DocTerms) -> int:
    """A new segment with the postings of ``terms``; returns its id."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    seg = _new_segment(conn, len(terms.length), len(terms.tids))
    if not len(terms.tids):   # documents without a single token: a segment with no postings holds them
        return seg
    bounds = np.flatnonzero(np.r_[True, terms.tids[1:] != terms.tids[:-1], True])
    starts, ends = bounds[:-1], bounds[1:]
    # every term's row packed at once (as _pack does one): its documents, then its frequencies, in one buffer
    # where the row of postings [a, b) is [2a, 2b) (a Python call per row and per part was most of the write)
    row_of = np.repeat(np.arange(len(starts)), ends - starts)
    at = np.arange(len(terms.tids))
    packed = np.empty(2 * len(terms.tids), dtype="<u4")
    packed[starts[row_of] + at] = terms.docs
    packed[ends[row_of] + at] = terms.tfs.astype("<f4").view("<u4")
    data = memoryview(packed.tobytes())
    names = terms.names
    conn.executemany("INSERT INTO sparse_postings (term, segment, data) VALUES (?, ?, ?)",
                     ((names[t], seg, data[8 * a:8 * b])
                      for t, a, b in zip(terms.tids[starts].tolist(), starts.tolist(), ends.tolist())))
    return seg


# -- keeping it current ---------------------------------------------------------------------------------


def _grow(array: Any, size: int) -> Any:
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    if len(array) >= size:
        return array.copy()
    out = np.zeros(size, dtype=np.uint32)
    out[:len(array)] = array
    return out


def _start(conn: Connection) -> State:
    """An empty index whose log lists every document: folding the log builds it."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    conn.execute("DELETE FROM sparse_segments")
    conn.execute("DELETE FROM sparse_pairs")
    seq = conn.execute("SELECT coalesce(max(seq), 0) FROM fulltext_log").fetchone()[0]
    conn.execute("INSERT INTO fulltext_log (document_id) SELECT id FROM documents ORDER BY id")
    conn.execute("DELETE FROM fulltext_log WHERE seq <= ?", (seq,))
    st = State(seq, None, 0, 0, np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.uint32))
    _save_state(conn, st)
    return st


def known_pairs(conn: Connection, tokenizer: Tokenizer) -> Pairs:
    """The known keywords of exactly two tokens (a question's known keyword is a phrase of full text)."""
    names = [r[0] for r in conn.execute("SELECT keyword FROM keywords")]
    return Pairs(tokenizer, [t for t in tokenizer.tokens(names) if len(t) == 2])


def _logged(conn: Connection, after: int) -> list[tuple[int, int]]:
    """The next ``FOLD_DOCS`` log entries ``(seq, document id)`` after ``after``."""
    return conn.execute("SELECT seq, document_id FROM fulltext_log WHERE seq > ? ORDER BY seq LIMIT ?",
                        (after, FOLD_DOCS)).fetchall()


class Helper(Protocol):
    """Runs a function in another process (``concurrent.futures.Executor.submit``)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]: ...


_HELPER_TOKENIZERS: dict[str, Tokenizer] = {}   # in a helper process: per index, its connection's tokenizer


def postings_elsewhere(path: str, doc_ids: list[int], pair_names: list[str]) -> DocTerms:
    """``read_documents`` in a helper process, on its own read-only connection, kept with its tokenizer (the
    words it learnt) for the helper's next batch; token ids are the helper's own (``names`` maps them: a
    segment is written by name)."""
    tokenizer = _HELPER_TOKENIZERS.get(path)
    if tokenizer is None:
        conn = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True)
        tokenizer = _HELPER_TOKENIZERS[path] = Tokenizer(conn)
    pairs = Pairs(tokenizer, [(a, b) for a, b in (n.split(" ") for n in pair_names)])
    return read_documents(tokenizer.conn, tokenizer, doc_ids, pairs)


#: Batches a helper process reads and tokenises ahead while this process does one: storing a batch costs about
#: two fifths of reading it, so with two the helper is busy while this process reads one and stores all three.
HELPER_BATCHES = 2


def _fold_batch(conn: Connection, tokenizer: Tokenizer, pairs: Pairs, helper: Helper | None = None) -> int:
    """Fold the next ``FOLD_DOCS`` logged documents into a new segment; returns how many were folded (-1:
    another process folded them first). The rows are read and tokenised before the write transaction, so
    other writers wait only for the segment's rows to be written; a document changed meanwhile has a later
    log entry and is folded again by a later batch. With a ``helper`` the ``HELPER_BATCHES`` batches after it
    are read and tokenised in the helper's process meanwhile, and folded next, in order."""
    st = load_state(conn)
    log = _logged(conn, st.fold_seq) if st is not None else []
    if st is None or not log:
        return 0
    later: list[tuple[list[tuple[int, int]], Future[Any]]] = []
    while helper is not None and len(later) < HELPER_BATCHES:
        ahead = _logged(conn, (later[-1][0] if later else log)[-1][0])
        if not ahead:
            break
        later.append((ahead, helper.submit(postings_elsewhere, db_file(conn), sorted({r[1] for r in ahead}),
                                           pairs.names)))
    ids = sorted({r[1] for r in log})
    done = _store_folded(conn, st.fold_seq, ids, read_documents(conn, tokenizer, ids, pairs), pairs, log[-1][0])
    after, stopped = log[-1][0], done < 0   # (another process folded: what was read ahead is of no use)
    for ahead, future in later:
        if stopped:
            future.cancel()
            continue
        ids = sorted({r[1] for r in ahead})
        try:
            terms = future.result()
        except Exception:  # noqa: BLE001 - the helper died or failed: this process reads the batch itself
            terms = read_documents(conn, tokenizer, ids, pairs)
        more = _store_folded(conn, after, ids, terms, pairs, ahead[-1][0])
        stopped = more < 0
        done, after = done + max(more, 0), ahead[-1][0]
    return done


def _store_folded(conn: Connection, after: int, ids: list[int], terms: DocTerms, pairs: Pairs,
                  last_seq: int) -> int:
    """Store a folded batch unless another process folded past ``after`` meanwhile (then -1)."""
    with transaction(conn):
        now = load_state(conn)
        if now is None or now.fold_seq != after:
            return -1
        _store_batch(conn, now, ids, terms, pairs, last_seq)
    return len(ids)


def _store_batch(conn: Connection, st: State, ids: list[int], terms: DocTerms, pairs: Pairs,
                 last_seq: int) -> None:
    """Write a folded batch: its segment, the documents' owner and length, the log consumed."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    seg = _write_segment(conn, terms) if terms.length else 0
    if seg:   # pairs seen for the first time are indexed from this segment on; a pair known to another
        # process's fold but not to this one is not in this segment: covered only once it is gone
        conn.executemany("INSERT OR IGNORE INTO sparse_pairs (pair, since) VALUES (?, ?)",
                         [(name, seg) for name in pairs.names])
        conn.execute("UPDATE sparse_pairs SET since = max(since, ?) WHERE pair NOT IN "
                     "(SELECT value FROM json_each(?))", (seg + 1, json.dumps(pairs.names)))
    top = max(max(ids) + 1, len(st.owner))
    st.owner, st.lengths = _grow(st.owner, top), _grow(st.lengths, top)
    idx = np.asarray(ids, dtype=np.int64)
    st.owner[idx] = [seg if d in terms.length else 0 for d in ids]
    st.lengths[idx] = [terms.length.get(d, 0) for d in ids]
    st.documents = int(np.count_nonzero(st.owner))
    st.tokens = int(st.lengths.sum(dtype=np.int64))
    st.fold_seq = last_seq
    conn.execute("DELETE FROM fulltext_log WHERE seq <= ?", (st.fold_seq,))
    done = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM fulltext_log WHERE seq > ?)", (st.fold_seq,)).fetchone()[0]
    st.structure = structure(conn) if done else None
    _save_state(conn, st)


def _merge(conn: Connection, st: State) -> int:
    """Merge the smallest segments (by live documents) while there are more than ``MAX_SEGMENTS``;
    returns how many segments were merged into one."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    segs = [r[0] for r in conn.execute("SELECT id FROM sparse_segments")]
    if len(segs) <= MAX_SEGMENTS:
        return 0
    live = np.bincount(st.owner, minlength=max(segs) + 1)
    chosen = sorted(segs, key=lambda s: (live[s], s))[:len(segs) - MERGED_SEGMENTS + 1]
    seg = _new_segment(conn, 0, 0)
    marks = json.dumps(chosen)
    terms = [r[0] for r in conn.execute("SELECT DISTINCT term FROM sparse_postings WHERE segment IN "
                                        "(SELECT value FROM json_each(?))", (marks,))]
    postings = 0
    for start in range(0, len(terms), MERGE_TERMS):   # a batch of terms at a time: bounded memory
        out = _merged_rows(conn, terms[start:start + MERGE_TERMS], marks, seg, st.owner)
        postings += sum(len(r[2]) // 8 for r in out)
        conn.executemany("INSERT INTO sparse_postings (term, segment, data) VALUES (?, ?, ?)", out)
    conn.execute("DELETE FROM sparse_postings WHERE segment IN (SELECT value FROM json_each(?))", (marks,))
    conn.execute("DELETE FROM sparse_segments WHERE id IN (SELECT value FROM json_each(?))", (marks,))
    # the merged segment holds documents of segments that did not index a pair first indexed after the oldest
    # of them: such a pair is covered again only once no older segment is live
    conn.execute("UPDATE sparse_pairs SET since = ? WHERE since > ?", (seg + 1, min(chosen)))
    moved = np.isin(st.owner, chosen)
    st.owner = st.owner.copy()
    st.owner[moved] = seg
    conn.execute("UPDATE sparse_segments SET documents = ?, postings = ? WHERE id = ?",
                 (int(moved.sum()), postings, seg))
    _save_state(conn, st)
    return len(chosen)


def _merged_rows(conn: Connection, terms: list[str], marks: str, seg: int,
                 owner: Any) -> list[tuple[str, int, bytes]]:
    """The merged segment's rows for ``terms``: each term's live postings of the merged segments, by document."""
    import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

    parts: dict[str, list[tuple[Any, Any]]] = {}
    for t, s, data in conn.execute("SELECT term, segment, data FROM sparse_postings WHERE term IN (SELECT value "
                                   "FROM json_each(?)) AND segment IN (SELECT value FROM json_each(?))",
                                   (json.dumps(terms), marks)):
        d, f = unpack(data)
        keep = owner[np.minimum(d, len(owner) - 1)] == s
        parts.setdefault(t, []).append((d[keep], f[keep]))
    out = []
    for t in terms:
        d = np.concatenate([p[0] for p in parts.get(t, [])]) if t in parts else np.zeros(0, np.uint32)
        if len(d):
            f = np.concatenate([p[1] for p in parts[t]])
            order = np.argsort(d, kind="stable")
            out.append((t, seg, _pack(d[order], f[order])))
    return out


def refresh(conn: Connection, progress: Progress | None = None, *, least: int | None = None,
            helper: Callable[[], AbstractContextManager[Helper]] | None = None) -> dict[str, Any]:
    """Bring the sparse index up to date with the full-text rows (see the module docstring); each batch
    is its own transaction. ``helper`` opens a helper process that reads and tokenises every other batch
    while this process does the one before (used from ``2 × FOLD_DOCS`` pending documents). Returns what
    was done, for ``sync``'s report."""
    t0 = time.perf_counter()
    if not engine_of(conn).sparse_index:
        return {"built": False, "documents": 0, "folded": 0}
    with transaction(conn):
        st = load_state(conn)
        documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        if st is None and documents < (min_docs() if least is None else least):
            conn.execute("DELETE FROM fulltext_log")   # nothing to fold into; the log stays bounded
            return {"built": False, "documents": documents, "folded": 0}
        if st is None or (st.structure is not None and st.structure != structure(conn) and not conn.execute(
                "SELECT EXISTS (SELECT 1 FROM fulltext_log WHERE seq > ?)", (st.fold_seq,)).fetchone()[0]):
            st = _start(conn)   # new, or the full-text rows changed without a log entry: build it all again
        pending = conn.execute("SELECT count(*) FROM fulltext_log WHERE seq > ?", (st.fold_seq,)).fetchone()[0]
        tokenizer = Tokenizer(conn)
        pairs = known_pairs(conn, tokenizer)
        # a pair no longer known is not indexed from now on: it must not count as covered
        conn.execute("DELETE FROM sparse_pairs WHERE pair NOT IN (SELECT value FROM json_each(?))",
                     (json.dumps(pairs.names),))
    with (helper() if helper is not None and pending >= 2 * FOLD_DOCS else nullcontext()) as pool:
        folded = _fold_all(conn, tokenizer, pairs, pending, progress, pool)
    merged = 0
    with transaction(conn):
        st = load_state(conn)
        if st is not None:
            merged = _merge(conn, st)
    segments = conn.execute("SELECT count(*) FROM sparse_segments").fetchone()[0]
    return {"built": True, "documents": st.documents if st else 0, "folded": folded, "segments": segments,
            "merged": merged, "seconds": round(time.perf_counter() - t0, 3)}


def fold_is_large(conn: Connection) -> bool:
    """Whether :func:`refresh` may have ``2 × FOLD_DOCS`` documents to fold (worth a helper process): that
    many logged, or that many documents and no index yet."""
    if not engine_of(conn).sparse_index:
        return False
    logged = conn.execute("SELECT count(*) FROM fulltext_log").fetchone()[0]
    if logged >= 2 * FOLD_DOCS:
        return True
    built = conn.execute("SELECT EXISTS (SELECT 1 FROM sparse_state)").fetchone()[0]
    return not built and conn.execute("SELECT count(*) FROM documents").fetchone()[0] >= 2 * FOLD_DOCS


def _fold_all(conn: Connection, tokenizer: Tokenizer, pairs: Pairs, pending: int,
              progress: Progress | None, helper: Helper | None) -> int:
    folded = 0
    while True:
        n = _fold_batch(conn, tokenizer, pairs, helper)
        if not n:
            return folded
        folded += max(n, 0)
        if progress:
            progress(min(folded, pending), pending)
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")


def term_rows(conn: Connection, terms: list[str]) -> dict[str, list[tuple[int, bytes]]]:
    """``{term: [(segment, data), ...]}`` for the given terms."""
    out: dict[str, list[tuple[int, bytes]]] = {}
    for term, seg, data in conn.execute("SELECT term, segment, data FROM sparse_postings WHERE term IN "
                                        "(SELECT value FROM json_each(?))", (json.dumps(sorted(set(terms))),)):
        out.setdefault(term, []).append((seg, data))
    return out


def describe(conn: Connection) -> dict[str, Any] | None:
    """What ``db-stats`` shows of the sparse index (None when there is none)."""
    if not engine_of(conn).sparse_index:
        return None
    try:
        row = conn.execute("SELECT documents, tokens, fold_seq, structure IS NOT NULL, updated_at "
                           "FROM sparse_state WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return None
    if row is None:
        return None
    segments, postings = conn.execute("SELECT count(*), coalesce(sum(postings), 0) FROM sparse_segments").fetchone()
    pending = conn.execute("SELECT count(DISTINCT document_id) FROM fulltext_log WHERE seq > ?", (row[2],)).fetchone()[0]
    return {"documents": row[0], "tokens": row[1], "segments": segments, "postings": postings,
            "pending_documents": pending, "updated_at": row[4]}
