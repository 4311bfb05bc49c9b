"""``with kb.conn:`` means on both engines what it means on ``sqlite3.Connection``: the transaction opened in
the block is committed at its end (rolled back after an error) and the connection stays open. (The
PostgreSQL connection used to close itself there, so the next statement failed with "the connection is
closed".)"""

from __future__ import annotations

import pytest

from kb_indexer.api import KnowledgeBase


def _value(db, key: str):
    with KnowledgeBase.open(db) as other:   # another connection: sees only what was committed
        row = other.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def test_a_block_commits_and_the_connection_stays_open(engine_db, tmp_path):
    kb, _ = KnowledgeBase.init(engine_db, tmp_path / "knowledge-base")
    try:
        with kb.conn:
            kb.conn.execute("BEGIN")
            kb.conn.execute("INSERT INTO meta (key, value) VALUES ('block_test', 'kept')")
        assert kb.conn.execute("SELECT value FROM meta WHERE key = 'block_test'").fetchone()[0] == "kept"
        assert _value(engine_db, "block_test") == "kept"
        with pytest.raises(RuntimeError), kb.conn:
            kb.conn.execute("BEGIN")
            kb.conn.execute("INSERT INTO meta (key, value) VALUES ('block_undone', 'gone')")
            raise RuntimeError("an error inside the block")
        assert not kb.conn.in_transaction
        assert _value(engine_db, "block_undone") is None
    finally:
        kb.close()
