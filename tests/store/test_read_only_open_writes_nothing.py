"""`KnowledgeBase.open(db, read_only=True)` (what `kbindex mcp --read-only` opens per request) answers queries
and reads documents as a read-only index file does, and refuses every write as `read_only`, on both engines: on
SQLite the file is opened `mode=ro`, on PostgreSQL every transaction of the connection is read-only (the server
refuses the write whatever the role may do). A pooled PostgreSQL connection lent read-only is writable again for
its next borrower."""

from __future__ import annotations

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import KbError

WRITTEN = ("queries", "query_attempts", "query_feedback", "skill_sessions", "llm_cache", "documents")


def _counts(kb) -> dict[str, int]:
    return {table: kb.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in WRITTEN}


@pytest.mark.both_engines
def test_a_read_only_index_answers_and_refuses_every_write(kb):
    asked = kb.query("reinforcement learning reward")
    path = asked["results"][0]["filepath"]
    before = _counts(kb)
    with KnowledgeBase.open(kb.db_path, read_only=True) as handle:
        out = handle.query("reinforcement learning reward")   # recorded by default: here it cannot be
        assert out["results"] and out["query_id"] is None and "history_error" in out
        assert handle.read(path)["text"]
        with pytest.raises(KbError) as refused:
            handle.learning.feedback(asked["query_id"], [path])
        assert refused.value.code == "read_only"
        with pytest.raises(KbError) as removed:
            handle.remove(path)
        assert removed.value.code == "read_only"
    assert _counts(kb) == before


def _backend(handle) -> tuple[int, str]:
    """(the server process of the handle's connection, its default_transaction_read_only)."""
    row = handle.conn.execute("SELECT pg_backend_pid(), current_setting('default_transaction_read_only')").fetchone()
    return int(row[0]), str(row[1])


@pytest.mark.parametrize("index_engine", ["postgres"], indirect=True)
def test_a_pooled_connection_lent_read_only_is_writable_for_the_next_borrower(kb):
    asked = kb.query("reinforcement learning reward")
    path = asked["results"][0]["filepath"]
    with KnowledgeBase.serving(kb.db_path):
        with KnowledgeBase.open(kb.db_path, read_only=True) as handle:
            lent, setting = _backend(handle)
            assert setting == "on"
            with pytest.raises(KbError):
                handle.learning.feedback(asked["query_id"], [path])
        seen = []
        for _ in range(9):   # the pool (at most 8) lends its idle connections in turn: the one above among them
            with KnowledgeBase.open(kb.db_path) as handle:
                seen.append(_backend(handle))
                assert handle.learning.feedback(asked["query_id"], [path])["recorded"]
    assert (lent, "off") in seen and all(setting == "off" for _, setting in seen)
