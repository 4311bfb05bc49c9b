"""Tokens exactly as the full-text index makes them, for the sparse index (:mod:`kb_indexer.store.sparse`).

``documents_fts`` tokenises with ``porter unicode61 remove_diacritics 2``. Rather than re-implement that
tokenizer (case folding and diacritics tables, the porter stemmer and its edge cases), every distinct
chunk of text is tokenised once by SQLite itself: a temporary FTS5 table with the same tokenizer and an
``fts5vocab`` view of it (in the connection's temp schema, so a read-only index is never written). Python
only splits text at ASCII characters that are neither letters nor digits, which are separators for
unicode61 in every case, and caches each chunk's tokens. A chunk of ASCII letters and digits is one
lower-case word whose one token is its stem; a chunk with other characters is tokenised whole. The words
of ASCII texts are mapped to token ids with numpy (the distinct words of a batch, each looked up once), not
with a dictionary look-up per word: the fold of 50,000 documents spent most of its time there.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence, cast

from kb_indexer.store.dbapi import Connection

TOKENIZE = "porter unicode61 remove_diacritics 2"   # = documents_fts (store/migrations.py m002)

# Runs of ASCII letters and digits and of non-ASCII characters: every ASCII character outside them
# separates tokens for unicode61, so a run's tokens are the same whatever stands around it. Written as what
# it is not (the other ASCII characters): a class up to U+10FFFF costs every process a 65,536-step compile.
_CHUNK = re.compile(r"[^\x00-/:-@\[-`{-\x7f]+")
# ASCII text: letters and digits kept (upper case lowered), every other byte a space.
_ASCII_TABLE = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))
_CACHE_MAX = 500_000     # distinct chunks kept (a real vocabulary is far smaller)
WORDS_PER_ROW = 2_000    # words of ASCII texts tokenised in one row of the temporary table


class Tokenizer:
    """FTS5's tokens of texts, with a per-instance cache of each chunk's tokens."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self._tokens: dict[str | bytes, tuple[str, ...]] = {}
        self._single: dict[str | bytes, int] = {}     # chunk -> id of its one token, -1 for any other chunk
        self.names: list[str] = []            # token id -> token
        self._ids: dict[str, int] = {}        # token -> token id
        self.words: Any = None      # words of ASCII texts of up to 16 bytes: their ids (word_tables.WordIds)

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
        found = self._tokenised(todo)
        for i, c in enumerate(todo):
            toks = tuple(found.get(i + 1, ()))
            self._tokens[c] = toks
            self._single[c] = self.token_id(toks[0]) if len(toks) == 1 else -1

    def word_ids(self, words: list[bytes]) -> list[int]:
        """The token id of each of the distinct ``words`` (of ASCII texts: one token each), not cached here."""
        found = self._tokenised(list(words))
        return [self.token_id(found[i][0]) if len(found.get(i, ())) == 1 else -1 for i in range(1, len(words) + 1)]

    def _tokenised(self, todo: list[str | bytes]) -> dict[int, list[str]]:
        """``{1-based position in todo: its tokens}`` from a temporary FTS5 table, filled inside one savepoint: in
        autocommit, each row of its own would be a transaction, and FTS5 writes its pending terms out at every
        commit (5,000 words: 2.0 s against 0.34 s in one). The savepoint touches the temp schema only.

        A word of an ASCII text (bytes: lower-case letters and digits) is one token: ``WORDS_PER_ROW`` of them
        share a row, each found by its offset (a row per word cost three times as much); a row whose token
        count is not its word count is tokenised again a word a row."""
        self.conn.execute("SAVEPOINT kb_sparse_tok")
        try:
            self.conn.execute(f"CREATE VIRTUAL TABLE temp.kb_sparse_tok USING fts5(x, tokenize = '{TOKENIZE}')")
            self.conn.execute("CREATE VIRTUAL TABLE temp.kb_sparse_tok_vocab USING "
                              "fts5vocab(temp, kb_sparse_tok, instance)")
            words = [i for i, c in enumerate(todo) if isinstance(c, bytes)]
            others = [i for i, c in enumerate(todo) if not isinstance(c, bytes)]
            found = self._rows_tokenised(todo, words, others)
            # a fresh table next time: deleting rows from an FTS5 table tokenises them again
            self.conn.execute("DROP TABLE temp.kb_sparse_tok_vocab")
            self.conn.execute("DROP TABLE temp.kb_sparse_tok")
        except BaseException:
            self.conn.execute("ROLLBACK TO kb_sparse_tok")   # the tables' creation too
            self.conn.execute("RELEASE kb_sparse_tok")
            raise
        self.conn.execute("RELEASE kb_sparse_tok")
        return found

    def _rows_tokenised(self, todo: list[str | bytes], words: list[int], others: list[int]) -> dict[int, list[str]]:
        """The tokens of ``todo`` (see ``_tokenised``): the ``words`` (positions) many to a row, then the others
        and the words of any row that did not give a token each, one to a row (rows after the shared ones)."""
        shared = [words[i:i + WORDS_PER_ROW] for i in range(0, len(words), WORDS_PER_ROW)]
        self.conn.executemany("INSERT INTO temp.kb_sparse_tok (rowid, x) VALUES (?, ?)",
                              [(k + 1, b" ".join(cast(bytes, todo[i]) for i in row).decode("ascii"))
                               for k, row in enumerate(shared)])
        rows: dict[int, dict[int, str]] = {}
        for doc, offset, term in self.conn.execute("SELECT doc, offset, CAST(term AS BLOB) FROM "
                                                   "temp.kb_sparse_tok_vocab WHERE doc <= ?", (len(shared),)):
            rows.setdefault(doc, {})[offset] = bytes(term).decode("utf-8", "ignore")
        found: dict[int, list[str]] = {}
        alone = list(others)
        for k, row in enumerate(shared):
            got = rows.get(k + 1, {})
            if len(got) == len(row) and all(n in got for n in range(len(row))):
                found.update((i + 1, [got[n]]) for n, i in enumerate(row))
            else:
                alone += row
        first = len(shared) + 1
        self.conn.executemany("INSERT INTO temp.kb_sparse_tok (rowid, x) VALUES (?, ?)",
                              [(first + k, c.decode("ascii") if isinstance(c, bytes) else c)
                               for k, c in enumerate(todo[i] for i in alone)])
        # as bytes: FTS5 cuts a token at 32,768 bytes, maybe inside a character (11,000 CJK characters in
        # a row); the cut character is dropped, here as for every text tokenised so
        for doc, term in self.conn.execute("SELECT doc, CAST(term AS BLOB) FROM temp.kb_sparse_tok_vocab "
                                           "WHERE doc >= ? ORDER BY doc, offset", (first,)):
            found.setdefault(alone[doc - first] + 1, []).append(bytes(term).decode("utf-8", "ignore"))
        return found

    def token_id(self, token: str) -> int:
        tid = self._ids.get(token)
        if tid is None:
            tid = self._ids[token] = len(self.names)
            self.names.append(token)
        return tid

    @staticmethod
    def _chunks(text: str) -> list[str] | list[bytes]:
        """The text's chunks in order: lower-case words as bytes for an ASCII text (the fast path), else
        strings (ASCII ones lowered, others as they are, for FTS5 to fold)."""
        if text.isascii():
            return text.encode("ascii").translate(_ASCII_TABLE).split()
        return [c.lower() if c.isascii() else c for c in _CHUNK.findall(text)]

    def _ids_in_order(self, chunks: list[str] | list[bytes]) -> list[int]:
        ids = list(map(self._single.__getitem__, chunks))
        if chunks and isinstance(chunks[0], bytes):   # an ASCII text: one token per chunk
            return ids
        if -1 in ids:   # chunks of several tokens (or none): each of their tokens
            ids = [self.token_id(tok) for c in chunks for tok in self._tokens[c]]
        return ids

    def column_ids(self, texts: list[str]) -> list[Any]:
        """Each text's token ids in order (int64 arrays; ``names`` maps them)."""
        return self._column_ids(texts)

    def _column_ids(self, texts: list[str]) -> list[Any]:
        """Each text's token ids in order (int64 arrays): ASCII texts all at once (``_ascii_ids``), others
        chunk by chunk."""
        import numpy as np  # lazy: numpy, only when the sparse index is built or read (large knowledge bases)

        out: list[Any] = [None] * len(texts)
        plain = [k for k, t in enumerate(texts) if t.isascii()]
        for k, ids in zip(plain, self._ascii_ids([texts[k] for k in plain])):
            out[k] = ids
        other = [k for k, t in enumerate(texts) if not t.isascii()]
        chunked = [self._chunks(texts[k]) for k in other]
        self._learn(set().union(*chunked))
        for k, chunks in zip(other, chunked):
            out[k] = np.asarray(self._ids_in_order(chunks), dtype=np.int64)
        return out

    def _ascii_ids(self, texts: list[str]) -> list[Any]:
        """The token ids of ASCII texts, found with numpy (:func:`kb_indexer.store.word_tables.ascii_ids`)."""
        from kb_indexer.store.word_tables import WordIds, ascii_ids  # lazy: numpy (the sparse index's paths)

        if self.words is None:
            self.words = WordIds()
        joined = " ".join(texts).encode("ascii").translate(_ASCII_TABLE)
        return ascii_ids(joined, [len(t) for t in texts], self.words, self.word_ids, self.long_ids)

    def long_ids(self, words: list[bytes]) -> list[int]:
        """The token ids of words of ASCII texts longer than 16 bytes (each chunk's tokens cached)."""
        self._learn(words)
        return [self._single[w] for w in words]

    def count(self, texts: list[list[str]], pairs: Pairs | None = None) -> tuple[Any, Any]:
        """Token counts of documents given as lists of column texts, as numpy arrays: ``(document index,
        column index, token id, occurrences)`` per token of a column (``names`` maps the ids), ordered by
        token, then document, then column; and
        ``(document index, column index, pair token id)`` per occurrence of one of ``pairs`` (two tokens
        in a row in one column, which is where FTS5 matches a phrase of them)."""
        from kb_indexer.store.word_tables import no_pairs, np  # lazy: numpy (the sparse index's paths)

        flat = [t or "" for columns in texts for t in columns]
        col_doc = [i for i, columns in enumerate(texts) for _ in columns]
        col_idx = [j for columns in texts for j in range(len(columns))]
        per_column = self._column_ids(flat)
        sizes = np.asarray([len(ids) for ids in per_column], dtype=np.int64)
        tids = np.concatenate(per_column) if per_column else np.zeros(0, dtype=np.int64)
        where = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
        width = max(1, len(sizes))
        key = np.sort(tids * width + where)   # by token, then column (so by document): the postings' order
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, dtype=np.int64)
        ns = np.diff(np.r_[starts, len(key)])
        tid, at = np.divmod(key[starts], width)
        docs, cols = np.asarray(col_doc, dtype=np.int64), np.asarray(col_idx, dtype=np.int64)
        singles = (docs[at], cols[at], tid, ns)
        if not pairs:
            return singles, no_pairs()
        at, pair_tids = pairs.find(tids, where)
        return singles, (docs[at], cols[at], pair_tids)

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """Each term's tokens in order (a term of several tokens is a phrase to FTS5)."""
        chunked = [[c.lower() if c.isascii() else c for c in _CHUNK.findall(t or "")] for t in terms]
        self._learn({c for chunks in chunked for c in chunks})
        return [tuple(tok for c in chunks for tok in self._tokens[c]) for chunks in chunked]


class Pairs:
    """Two-token phrases (the known keywords of two tokens) whose occurrences are indexed like tokens, as
    pseudo-tokens named ``"first second"`` (an FTS5 token never holds a space)."""

    def __init__(self, tokenizer: Tokenizer, phrases: Iterable[tuple[str, str]]):
        from kb_indexer.store.word_tables import KeyTable, np  # lazy: numpy (the sparse index's paths)

        self.names = sorted({f"{a} {b}" for a, b in phrases})
        keyed = {(tokenizer.token_id(n.split(" ")[0]) << 32) | tokenizer.token_id(n.split(" ")[1]): n
                 for n in self.names}
        self.table = KeyTable()
        if keyed:
            self.table.add(np.asarray(sorted(keyed), dtype=np.uint64),
                           [tokenizer.token_id(keyed[k]) for k in sorted(keyed)])
        self._first_tids = {k >> 32 for k in keyed}
        self._second_tids = {k & 0xFFFFFFFF for k in keyed}

    def __bool__(self) -> bool:
        return bool(self.names)

    def find(self, seq: Any, where: Any) -> tuple[Any, Any]:
        """(column number, pair token id) of each pair occurrence in ``seq`` (token ids in order; ``where``:
        the column number of each)."""
        from kb_indexer.store.word_tables import no_pairs, np  # lazy: numpy (the sparse index's paths)

        if len(seq) < 2 or not len(self.table):
            return no_pairs()[:2]
        first, second = seq[:-1], seq[1:]
        starts = np.zeros(int(seq.max()) + 1, dtype=bool)
        starts[[t for t in self._first_tids if t < len(starts)]] = True
        ends = np.zeros(len(starts), dtype=bool)
        ends[[t for t in self._second_tids if t < len(ends)]] = True
        maybe = np.flatnonzero(starts[first] & ends[second] & (where[:-1] == where[1:]))   # in one column
        tids, hit = self.table.find((first[maybe] << 32) | second[maybe])
        return where[maybe[hit]], tids[hit]
