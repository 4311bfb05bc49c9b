"""A full disk, a lock held too long, a damaged file: each is reported with its documented code and what
to do (never as `internal`, never hidden behind a failed rollback), and nothing is half-written."""

from __future__ import annotations

import json
import sqlite3

import pytest

from kb_indexer.errors import BusyError, DiskFullError, KbError
from kb_indexer.store.connection import transaction
from kb_indexer.store.errors import from_sqlite, translate


def _fill_up(conn: sqlite3.Connection) -> None:
    """Make the index "full": SQLite answers SQLITE_FULL once it would need another page."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


@pytest.mark.sqlite_only("a full disk made with PRAGMA max_page_count")
def test_transaction_keeps_the_disk_full_error_not_the_failed_rollback(empty_kb):
    conn = empty_kb.conn
    _fill_up(conn)
    with pytest.raises(sqlite3.OperationalError) as info:
        with transaction(conn):
            for i in range(200):
                conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (f"k{i}", "x" * 4000))
    assert "full" in str(info.value)
    assert "rollback" not in str(info.value)
    assert not conn.in_transaction


@pytest.mark.sqlite_only("a full disk made with PRAGMA max_page_count")
def test_api_write_on_a_full_disk_is_disk_full_and_writes_nothing(empty_kb):
    before = empty_kb.db_stats()
    _fill_up(empty_kb.conn)
    with pytest.raises(DiskFullError) as info:
        for i in range(200):
            empty_kb.relate(f"alpha {i} " + "a" * 150, f"beta {i}", "synonym", "c" * 3000)
    assert info.value.code == "disk_full"
    assert "Free some space" in info.value.message
    empty_kb.conn.execute("PRAGMA max_page_count = 1073741823")
    assert empty_kb.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    after = empty_kb.db_stats()
    assert after["similarities"] - before["similarities"] < 200  # the failed one left nothing behind
    empty_kb.relate("gamma", "delta", "synonym", "ctx")  # and the index is usable again


@pytest.mark.sqlite_only("SQLite's write lock and busy timeout on the .db file")
def test_write_that_waits_past_the_busy_timeout_is_busy(empty_kb):
    other = sqlite3.connect(str(empty_kb.db_path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        empty_kb.conn.execute("PRAGMA busy_timeout = 50")
        with pytest.raises(BusyError) as info:
            empty_kb.relate("a", "b", "synonym", "ctx")
        assert info.value.code == "busy"
        assert "Run the command again" in info.value.message
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.mark.sqlite_only("SQLite's write lock and busy timeout on the .db file")
def test_cli_busy_is_reported_as_busy_in_json(cli, empty_kb, monkeypatch):
    monkeypatch.setenv("KBINDEX_BUSY_TIMEOUT", "0.05")
    other = sqlite3.connect(str(empty_kb.db_path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        res = cli("relate", "a", "b", "-t", "synonym", "-c", "ctx", "--db", empty_kb.db_path, "--format", "json")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert res.exit_code == 1
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "busy", err


@pytest.mark.sqlite_only("SQLite's write lock on the .db file")
def test_query_that_cannot_record_says_why_with_a_code(empty_kb, cli):
    other = sqlite3.connect(str(empty_kb.db_path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        empty_kb.conn.execute("PRAGMA busy_timeout = 50")
        out = empty_kb.query("anything at all")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert out["query_id"] is None
    assert out["history_error_code"] == "busy"
    assert "busy" in out["history_error"]


@pytest.mark.parametrize("message, code", [
    ("database is locked", "busy"),
    ("attempt to write a readonly database", "read_only"),
    ("database or disk is full", "disk_full"),
    ("database disk image is malformed", "bad_database"),
    ("file is not a database", "bad_database"),
    ("disk I/O error", "io_error"),
])
def test_sqlite_failures_map_to_documented_codes(message, code):
    mapped = from_sqlite(sqlite3.OperationalError(message), "/x/kbindex.db")
    assert mapped is not None and mapped.code == code
    assert mapped.exit_code == 1


def test_an_unknown_sqlite_error_is_a_bug():
    assert translate(sqlite3.OperationalError("no such column: nonsense")) is None
    assert translate(RuntimeError("x")) is None
    err = KbError("m", code="invalid_input")
    assert translate(err) is err


def test_internal_error_says_it_is_a_bug_and_how_to_report_it(cli, empty_kb, monkeypatch):
    from kb_indexer.api import KnowledgeBase

    def boom(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(KnowledgeBase, "db_stats", boom)
    res = cli("db-stats", "--db", empty_kb.db_path, "--format", "json")
    assert res.exit_code == 1
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "internal"
    assert "bug in kbindex" in err["message"] and "KBINDEX_DEBUG=1" in err["message"]
