"""The sparse index's tokenizer asks SQLite for the tokens of many words at once inside a savepoint on the temp
schema: in autocommit it leaves no transaction and no table behind; inside a caller's transaction it neither
commits nor rolls back the caller's writes; a failure leaves neither its tables nor a savepoint."""

from __future__ import annotations

import sqlite3

import pytest

from kb_indexer.store.fts_tokens import Tokenizer

WORDS = [f"word{i}ing" for i in range(300)] + ["running", "Ærø", "don't", "東京"]


def _temp_tables(conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_temp_master WHERE type = 'table'")]


def test_in_autocommit_nothing_is_left_open(tmp_path):
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    toks = Tokenizer(conn).tokens(WORDS)
    assert toks[300:] == [("run",), ("ærø",), ("don", "t"), ("東京",)]
    assert toks[0] == ("word0",)
    assert not conn.in_transaction and _temp_tables(conn) == []


def test_a_callers_transaction_stays_the_callers(tmp_path):
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES (1)")
    Tokenizer(conn).tokens(WORDS)
    assert conn.in_transaction
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES (2)")
    Tokenizer(conn).tokens(["other", "words"])
    conn.execute("COMMIT")
    assert conn.execute("SELECT x FROM t").fetchall() == [(2,)]


def test_a_failure_leaves_no_table_and_no_savepoint(tmp_path):
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    tok = Tokenizer(conn)
    with pytest.raises((sqlite3.Error, UnicodeEncodeError)):
        tok.tokens(["fine", "bad\ud800word"])   # a lone surrogate cannot be encoded for SQLite
    assert not conn.in_transaction and _temp_tables(conn) == []
    assert tok.tokens(["running"]) == [("run",)]
