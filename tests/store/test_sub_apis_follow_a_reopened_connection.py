"""A KnowledgeBase whose connection is replaced (the index reopened) uses the new one in its sub-APIs too,
though they were built on the old one."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def test_a_new_connection_reaches_the_sub_apis(kb):
    from kb_indexer.store import open_db

    assert kb.skills.all()["count"] == 0          # built on the first connection
    kb.conn.close()
    kb.conn = open_db(kb.db_path)                   # the index reopened
    assert kb.skills.all()["count"] == 0 and kb.learning.history()["queries"] == []
    assert kb.stale()["stale"] is False
