"""The query history read and written a batch at a time (export, import of a file, history, clear-history)
gives what reading it whole gave: the same export text, the same order and counts; and the index it is read
by exists after the upgrade, on both engines."""

from __future__ import annotations

import json

import pytest

from kb_indexer import jsonfile
from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.learn import feedback as history_module
from kb_indexer.store import export as export_module
from kb_indexer.store.connection import transaction
from kb_indexer.store.engine import is_postgres

pytestmark = pytest.mark.both_engines

QUESTIONS = ["reinforcement learning", "transformer attention", "policy gradients", "neural networks",
             "attention heads", "value functions", "reward shaping"]


@pytest.fixture
def second_target(tmp_path, request, index_engine):
    """Where a second index goes: another SQLite file, or another database of the test's server."""
    if index_engine != "postgres":
        yield tmp_path / "copy.db"
        return
    import psycopg

    from tests.conftest import _database_url

    admin = request.getfixturevalue("pg_server").get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute('DROP DATABASE IF EXISTS "kb_second" WITH (FORCE)')
        conn.execute('CREATE DATABASE "kb_second"')
    yield _database_url(admin, "kb_second")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute('DROP DATABASE IF EXISTS "kb_second" WITH (FORCE)')


def _history(kb: KnowledgeBase) -> list[int]:
    """Record the questions, give two of them feedback, and set their last attempts: two share a time."""
    ids = [kb.query(q)["query_id"] for q in QUESTIONS]
    kb.learning.feedback(ids[0], ["policy-gradient-methods.md"], ["reward-shaping.md"], "useful")
    kb.learning.feedback(ids[3], ["policy-gradient-methods.md"])
    times = ["2025-01-05T10:00:00", "2025-03-01T00:00:00", "2025-01-05T10:00:00", "2024-12-31T23:59:59",
             "2025-02-01T08:00:00", "2025-06-01T00:00:00", "2024-06-01T00:00:00"]
    with transaction(kb.conn):
        for qid, t in zip(ids, times):
            kb.conn.execute("UPDATE queries SET last_attempted_at = ? WHERE id = ?", (t, qid))
    return ids


def _expected_order(kb: KnowledgeBase) -> list[int]:
    rows = kb.conn.execute("SELECT id, last_attempted_at FROM queries").fetchall()
    return [r[0] for r in sorted(rows, key=lambda r: (r[1], r[0]), reverse=True)]


def test_history_lists_the_latest_queries_first_across_batches(kb, monkeypatch):
    _history(kb)
    monkeypatch.setattr(history_module, "HISTORY_BATCH", 2)
    order = _expected_order(kb)
    everything = kb.learning.history(limit=0)
    assert [q["query_id"] for q in everything["queries"]] == order
    assert everything["count"] == len(QUESTIONS)
    assert [q["query_id"] for q in kb.learning.history(limit=3)["queries"]] == order[:3]
    assert [q["query_id"] for q in kb.learning.history(limit=4)["queries"]] == order[:4]
    streamed = list(kb.learning.history_items(limit=0))
    assert [q["query_id"] for q in streamed] == order
    assert [q["feedback"] for q in streamed] == [q["feedback"] for q in everything["queries"]]
    # --last: the query of this asker's latest attempt (the times above were rewritten; the attempts were not)
    latest = kb.conn.execute("SELECT query_id FROM query_attempts ORDER BY id DESC LIMIT 1").fetchone()[0]
    assert kb.learning.last_query_id() == latest


def test_export_written_as_it_is_read_is_the_text_of_the_whole_export(kb, monkeypatch):
    _history(kb)
    monkeypatch.setattr(export_module, "EXPORT_BATCH", 2)   # PostgreSQL reads the rows two at a time
    parts: list[str] = []
    counts = kb.export_to(parts.append)
    whole = kb.export()
    assert "".join(parts) == json.dumps(whole, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    assert counts == {table: len(rows) for table, rows in whole["tables"].items()} == kb.export_counts()
    assert counts["queries"] == len(QUESTIONS) and counts["query_feedback"] == 3


@pytest.mark.parametrize("indent", [2, None], ids=["as-export-writes-it", "on-one-line"])
def test_an_export_file_read_a_row_at_a_time_imports_the_same_index(kb, tmp_path, monkeypatch, second_target,
                                                                    indent):
    """Files written by the old whole-object export (the same layout) and hand-compacted ones alike."""
    _history(kb)
    before = kb.export()
    path = tmp_path / "export.json"
    path.write_text(json.dumps(before, ensure_ascii=False, indent=indent), encoding="utf-8")
    monkeypatch.setattr(jsonfile, "_CHUNK", 97)   # rows and strings cut by the blocks the file is read in
    monkeypatch.setattr(export_module, "IMPORT_BATCH", 3)
    other, _ = KnowledgeBase.init(second_target, kb.kb_root)
    try:
        result = other.import_file(path)
        after = other.export()
        assert result["imported"] == {table: len(rows) for table, rows in before["tables"].items()}
        assert after["tables"] == before["tables"]
        found = other.query("reinforcement learning", options=QueryOptions(record=False))["results"]
        same = kb.query("reinforcement learning", options=QueryOptions(record=False))["results"]
        assert found and [r["filepath"] for r in found] == [r["filepath"] for r in same]
    finally:
        other.close()


def test_a_bad_row_in_an_export_file_is_named_and_nothing_is_imported(kb, tmp_path, second_target):
    _history(kb)
    data = kb.export()
    data["tables"]["query_feedback"][1]["helpful"] = 7   # the CHECK refuses it: found when inserting
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    other, _ = KnowledgeBase.init(second_target, kb.kb_root)
    try:
        with pytest.raises(Exception, match="query_feedback.*bad row"):
            other.import_file(path)
        assert other.db_stats()["documents"] == 0
        assert other.conn.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 0
    finally:
        other.close()


def test_clear_history_before_a_date_counts_the_queries_and_feedback_it_removes(kb):
    ids = _history(kb)
    out = kb.learning.clear_history("2025-01-05T10:00:00")
    # last asked before it: ids[3] (with one feedback mark) and ids[6]
    assert out == {"queries_removed": 2, "feedback_removed": 1, "before": "2025-01-05T10:00:00"}
    left = {r[0] for r in kb.conn.execute("SELECT id FROM queries")}
    assert left == set(ids) - {ids[3], ids[6]}
    assert {r[0] for r in kb.conn.execute("SELECT DISTINCT query_id FROM query_attempts")} == left
    assert [r[0] for r in kb.conn.execute("SELECT query_id FROM query_feedback")] == [ids[0], ids[0]]
    assert kb.learning.clear_history(all_=True) == {"queries_removed": 5, "feedback_removed": 2, "before": None}
    assert kb.conn.execute("SELECT COUNT(*) FROM query_attempts").fetchone()[0] == 0
    assert kb.learning.clear_history("2030-01-01") == {"queries_removed": 0, "feedback_removed": 0,
                                                       "before": "2030-01-01T00:00:00"}


def _indexes(kb: KnowledgeBase) -> set[str]:
    if is_postgres(kb.conn):
        return {r[0] for r in kb.conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
    return {r[0] for r in kb.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_an_index_from_before_the_history_order_migration_gets_its_indexes(kb):
    target, root = kb.db_path, kb.kb_root
    name = "m005_history_order" if is_postgres(kb.conn) else "m120_history_order"
    # PostgreSQL also finds a query's first attempt by (query_id, id); SQLite's index on query_id holds the rowid
    new = {"idx_queries_last_attempted", "idx_query_feedback_attempt"} | (
        {"idx_query_attempts_query_id"} if is_postgres(kb.conn) else set())
    assert new <= _indexes(kb)
    with transaction(kb.conn):
        for index in new:
            kb.conn.execute(f"DROP INDEX {index}")
        kb.conn.execute("DELETE FROM _migrations WHERE name = ?", (name,))
    kb.close()
    again = KnowledgeBase.open(target, kb=root)
    try:
        assert new <= _indexes(again)
        assert name in {r[0] for r in again.conn.execute("SELECT name FROM _migrations")}
    finally:
        again.close()


@pytest.mark.sqlite_only("EXPLAIN QUERY PLAN is SQLite's")
def test_history_and_clear_history_read_the_queries_by_the_index(kb):
    def plan(sql: str, params: tuple = ()) -> str:
        return " ".join(str(r[-1]) for r in kb.conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    first = plan(history_module._HISTORY_SQL.format(where=""), (10,))
    later = plan(history_module._HISTORY_SQL.format(where="WHERE (q.last_attempted_at, q.id) < (?, ?) "),
                 ("2025-01-01", 5, 10))
    assert "idx_queries_last_attempted" in first and "TEMP B-TREE" not in first
    assert "idx_queries_last_attempted" in later and "TEMP B-TREE" not in later
    assert "idx_queries_last_attempted" in plan("DELETE FROM queries WHERE last_attempted_at < ?", ("2025",))
    assert "idx_query_feedback_attempt" in plan("SELECT id FROM query_feedback WHERE attempt_id = ?", (1,))
