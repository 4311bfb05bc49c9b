"""Tokens exactly as the full-text index makes them, for the sparse index (:mod:`kb_indexer.store.sparse`).

``documents_fts`` tokenises with ``porter unicode61 remove_diacritics 2``. Rather than re-implement that
tokenizer (case folding and diacritics tables, the porter stemmer and its edge cases), every distinct
chunk of text is tokenised once by SQLite itself: a temporary FTS5 table with the same tokenizer and an
``fts5vocab`` view of it (in the connection's temp schema, so a read-only index is never written). Python
only splits text at ASCII characters that are neither letters nor digits, which are separators for
unicode61 in every case, and caches each chunk's tokens. A chunk of ASCII letters and digits is one
lower-case word whose one token is its stem; a chunk with other characters is tokenised whole.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from typing import Any, Iterable, Sequence

TOKENIZE = "porter unicode61 remove_diacritics 2"   # = documents_fts (store/migrations.py m002)

# Runs of ASCII letters and digits and of non-ASCII characters: every ASCII character outside them
# separates tokens for unicode61, so a run's tokens are the same whatever stands around it.
_CHUNK = re.compile(r"[0-9A-Za-z\u0080-\U0010FFFF]+")
# ASCII text: letters and digits kept (upper case lowered), every other byte a space.
_ASCII_TABLE = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))
_CACHE_MAX = 500_000     # distinct chunks kept (a real vocabulary is far smaller)


class Tokenizer:
    """FTS5's tokens of texts, with a per-instance cache of each chunk's tokens."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._tokens: dict[str | bytes, tuple[str, ...]] = {}
        self._single: dict[str | bytes, int] = {}     # chunk -> id of its one token, -1 for any other chunk
        self.names: list[str] = []            # token id -> token
        self._ids: dict[str, int] = {}        # token -> token id

    def _learn(self, chunks: Iterable[str | bytes]) -> None:
        """Tokenise the chunks not cached yet, in one round trip through SQLite (a chunk of an ASCII text is
        bytes: see ``_chunks``)."""
        chunks = set(chunks)
        todo = [c for c in chunks if c not in self._tokens]
        if not todo:
            return
        if len(self._tokens) + len(todo) > _CACHE_MAX:   # start afresh, with every chunk asked for now
            self._tokens.clear()
            self._single.clear()
            todo = list(chunks)
        self.conn.execute(f"CREATE VIRTUAL TABLE temp.kb_sparse_tok USING fts5(x, tokenize = '{TOKENIZE}')")
        try:
            self.conn.execute("CREATE VIRTUAL TABLE temp.kb_sparse_tok_vocab USING "
                              "fts5vocab(temp, kb_sparse_tok, instance)")
            self.conn.executemany("INSERT INTO temp.kb_sparse_tok (rowid, x) VALUES (?, ?)",
                                  [(i + 1, c.decode("ascii") if isinstance(c, bytes) else c)
                                   for i, c in enumerate(todo)])
            found: dict[int, list[str]] = {}
            for doc, term in self.conn.execute("SELECT doc, term FROM temp.kb_sparse_tok_vocab "
                                               "ORDER BY doc, offset"):
                found.setdefault(doc, []).append(term)
        finally:   # a fresh table next time: deleting rows from an FTS5 table tokenises them again
            self.conn.execute("DROP TABLE IF EXISTS temp.kb_sparse_tok_vocab")
            self.conn.execute("DROP TABLE temp.kb_sparse_tok")
        for i, c in enumerate(todo):
            toks = tuple(found.get(i + 1, ()))
            self._tokens[c] = toks
            self._single[c] = self.token_id(toks[0]) if len(toks) == 1 else -1

    def token_id(self, token: str) -> int:
        tid = self._ids.get(token)
        if tid is None:
            tid = self._ids[token] = len(self.names)
            self.names.append(token)
        return tid

    @staticmethod
    def _chunks(text: str) -> list:
        """The text's chunks in order: lower-case words as bytes for an ASCII text (the fast path), else
        strings (ASCII ones lowered, others as they are, for FTS5 to fold)."""
        if text.isascii():
            return text.encode("ascii").translate(_ASCII_TABLE).split()
        return [c.lower() if c.isascii() else c for c in _CHUNK.findall(text)]

    def _ids_in_order(self, chunks: list) -> list[int]:
        ids = list(map(self._single.__getitem__, chunks))
        if chunks and isinstance(chunks[0], bytes):   # an ASCII text: one token per chunk
            return ids
        if -1 in ids:   # chunks of several tokens (or none): each of their tokens
            ids = [self.token_id(tok) for c in chunks for tok in self._tokens[c]]
        return ids

    def count(self, texts: list[list[str]], pairs: Pairs | None = None) -> tuple[Any, Any]:
        """Token counts of documents given as lists of column texts, as numpy arrays: ``(document index,
        column index, token id, occurrences)`` per token of a column (``names`` maps the ids), ordered by
        token, then document, then column; and
        ``(document index, column index, pair token id)`` per occurrence of one of ``pairs`` (two tokens
        in a row in one column, which is where FTS5 matches a phrase of them)."""
        import numpy as np

        chunked = [[self._chunks(t or "") for t in columns] for columns in texts]
        self._learn(set().union(*(chunks for columns in chunked for chunks in columns)))
        seq = array("q")       # every column's token ids in order, one column after the other
        sizes = array("q")     # tokens per column
        col_doc: list[int] = []
        col_idx: list[int] = []
        for i, columns in enumerate(chunked):
            for j, chunks in enumerate(columns):
                ids = self._ids_in_order(chunks)
                seq.extend(ids)
                sizes.append(len(ids))
                col_doc.append(i)
                col_idx.append(j)
        tids = np.frombuffer(seq, dtype=np.int64) if len(seq) else np.zeros(0, dtype=np.int64)
        where = np.repeat(np.arange(len(sizes), dtype=np.int64), np.frombuffer(sizes, dtype=np.int64)
                          if len(sizes) else np.zeros(0, dtype=np.int64))
        width = max(1, len(sizes))
        key = np.sort(tids * width + where)   # by token, then column (so by document): the postings' order
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=np.int64)
        ns = np.diff(np.r_[starts, len(key)])
        tid, at = np.divmod(key[starts], width)
        docs, cols = np.asarray(col_doc, dtype=np.int64), np.asarray(col_idx, dtype=np.int64)
        singles = (docs[at], cols[at], tid, ns)
        if not pairs:
            return singles, _no_pairs()
        at, pair_tids = pairs.find(tids, where)
        return singles, (docs[at], cols[at], pair_tids)

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """Each term's tokens in order (a term of several tokens is a phrase to FTS5)."""
        chunked = [[c.lower() if c.isascii() else c for c in _CHUNK.findall(t or "")] for t in terms]
        self._learn({c for chunks in chunked for c in chunks})
        return [tuple(tok for c in chunks for tok in self._tokens[c]) for chunks in chunked]


def _no_pairs() -> tuple[Any, Any, Any]:
    import numpy as np

    empty = np.zeros(0, dtype=np.int64)
    return empty, empty, empty


class Pairs:
    """Two-token phrases (the known keywords of two tokens) whose occurrences are indexed like tokens, as
    pseudo-tokens named ``"first second"`` (an FTS5 token never holds a space)."""

    def __init__(self, tokenizer: Tokenizer, phrases: Iterable[tuple[str, str]]):
        import numpy as np

        self.names = sorted({f"{a} {b}" for a, b in phrases})
        keyed = {(tokenizer.token_id(n.split(" ")[0]) << 32) | tokenizer.token_id(n.split(" ")[1]): n
                 for n in self.names}
        self.keys = np.asarray(sorted(keyed), dtype=np.int64)
        self.tids = np.asarray([tokenizer.token_id(keyed[k]) for k in sorted(keyed)], dtype=np.int64)
        self._first_tids = {int(k) >> 32 for k in self.keys}

    def __bool__(self) -> bool:
        return bool(self.names)

    def find(self, seq: Any, where: Any) -> tuple[Any, Any]:
        """(column number, pair token id) of each pair occurrence in ``seq`` (token ids in order; ``where``:
        the column number of each)."""
        import numpy as np

        if len(seq) < 2 or not len(self.keys):
            return _no_pairs()[:2]
        first, second = seq[:-1], seq[1:]
        starts = np.zeros(int(seq.max()) + 1, dtype=bool)
        starts[[t for t in self._first_tids if t < len(starts)]] = True
        maybe = np.flatnonzero(starts[first] & (where[:-1] == where[1:]))   # two tokens of one column
        keys = (first[maybe] << 32) | second[maybe]
        pos = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        hit = self.keys[pos] == keys
        return where[maybe[hit]], self.tids[pos[hit]]
