"""The sparse index's token counts (``Tokenizer.count``) are FTS5's own, word for word: ASCII texts take a
vectorised path that keys words of up to 16 bytes by their bytes, so words at and around that length,
digits, punctuation, empty columns and a mix of ASCII and non-ASCII columns in one batch are checked
against FTS5's ``fts5vocab`` instance table."""

from __future__ import annotations

import random
import sqlite3
from collections import Counter

from kb_indexer.store.fts_tokens import TOKENIZE, Pairs, Tokenizer

EDGE = ["a", "I", "x1", "2026", "running", "Running", "RUNNING", "ran", "abcdefghijklmno", "abcdefghijklmnop",
        "abcdefghijklmnopq", "abcdefghijklmnopqrstuvwxyz0123456789" * 2, "0123456789abcdef", "16charsexactly16",
        "q-learning", "don't", "3.14", "v2.0", "HTTP/2", "e-mail", "__init__", "a.b.c", "zzzzzzzzzzzzzzzzz"]
ODD = ["café", "naïve", "Ærø", "東京", "straße", "ﬁle", "x²"]


def _fts5_counts(texts: list[list[str]]) -> Counter:
    conn = sqlite3.connect(":memory:")
    ncols = len(texts[0])
    cols = ", ".join(f"c{j}" for j in range(ncols))
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({cols}, tokenize = '{TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.executemany(f"INSERT INTO t (rowid, {cols}) VALUES (?, {', '.join('?' * ncols)})",
                     [(i + 1, *cols_) for i, cols_ in enumerate(texts)])
    names = [f"c{j}" for j in range(ncols)]
    return Counter((doc - 1, names.index(col), term) for doc, col, term in conn.execute("SELECT doc, col, term FROM v"))


def _counts(texts: list[list[str]]) -> Counter:
    tok = Tokenizer(sqlite3.connect(":memory:"))
    (docs, cols, tids, ns), _ = tok.count(texts)
    return Counter({(int(d), int(c), tok.names[int(t)]): int(n) for d, c, t, n in zip(docs, cols, tids, ns)})


def test_ascii_words_around_the_key_length_count_like_fts5():
    rng = random.Random(11)
    texts = [[" ".join(rng.choice(EDGE) for _ in range(rng.randrange(0, 40))) for _ in range(4)]
             for _ in range(60)]
    texts.append(["", "", "", ""])
    texts.append([EDGE[11], "...", "   ", "a"])
    assert _counts(texts) == _fts5_counts(texts)


def test_ascii_and_non_ascii_columns_in_one_batch_count_like_fts5():
    rng = random.Random(12)
    texts = [[" ".join(rng.choice(EDGE + (ODD if (i + j) % 3 == 0 else [])) for _ in range(30)) for j in range(4)]
             for i in range(40)]
    assert _counts(texts) == _fts5_counts(texts)


def test_pairs_are_found_where_fts5_sees_the_phrase():
    texts = [["heat transfer", "transfer heat", "heat  transfer heat transfer", "heat. transfer; heat"]]
    tok = Tokenizer(sqlite3.connect(":memory:"))
    pairs = Pairs(tok, [t for t in tok.tokens(["heat transfer"]) if len(t) == 2])
    _, (docs, cols, _) = tok.count(texts, pairs)
    assert Counter(cols.tolist()) == {0: 1, 2: 2, 3: 1}


def test_words_learnt_batch_after_batch_count_like_fts5():
    """One tokenizer over many batches, as a fold reads them: new words of every length keep arriving (names,
    codes) beside known ones, and each batch's counts are FTS5's own."""
    rng = random.Random(13)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

    def word() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 3, 7, 8, 9, 12, 15, 16, 17, 30])))

    known = [word() for _ in range(500)] + EDGE
    tok = Tokenizer(sqlite3.connect(":memory:"))
    for _ in range(8):
        texts = [[" ".join(rng.choice(known) if rng.random() < 0.7 else word() for _ in range(rng.randrange(0, 50)))
                  for _ in range(2)] for _ in range(50)]
        (docs, cols, tids, ns), _ = tok.count(texts)
        assert Counter({(int(d), int(c), tok.names[int(t)]): int(n) for d, c, t, n in zip(docs, cols, tids, ns)}) \
            == _fts5_counts(texts)
