"""`kbindex mcp` on a PostgreSQL index, behind a session stuck in a transaction that holds a feedback mark's row:
each `kb_feedback` on that mark is a tool error saying the index is busy once the busy timeout has passed (it
waited with no limit, holding one of the server's pooled connections), and each gives its connection back: more
calls than the pool has connections all answer, and once the holder is gone the next call records."""

from __future__ import annotations

import anyio
import pytest

from tests.mcp_client import data, session

pytest.importorskip("psycopg")
pytest.importorskip("mcp")

POOL_MAX = 8   # kb_indexer.store.pg.pool.MAX_SIZE, stated here as the behaviour promised


@pytest.fixture
def marked(pg_url, project):
    """An index with one query and its feedback mark; the query's id."""
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.config import DbUrl

    kb, _ = KnowledgeBase.init(DbUrl(pg_url), project / "knowledge-base")
    try:
        assert kb.sync()["errors"] == []
        qid = kb.query("reward shaping")["query_id"]
        kb.learning.feedback(qid, ["reward-shaping.md"], [])
    finally:
        kb.close()
    return qid


def test_kb_feedback_behind_a_stuck_holder_is_busy_and_returns_its_connection(pg_url, marked, monkeypatch):
    import psycopg

    monkeypatch.setenv("KBINDEX_BUSY_TIMEOUT", "0.5")
    holder = psycopg.connect(pg_url, autocommit=True)
    holder.execute("BEGIN")
    holder.execute("UPDATE query_feedback SET processed = processed WHERE query_id = %s", (marked,))
    args = {"query_id": marked, "not_helpful": ["reward-shaping.md"]}

    async def body(s):
        with anyio.fail_after(240):   # a hang fails the test instead of blocking the suite
            answers = [await s.call_tool("kb_feedback", args) for _ in range(POOL_MAX + 2)]
            holder.execute("ROLLBACK")
            return answers, await s.call_tool("kb_feedback", args)

    try:
        answers, after = session(pg_url, body)
    finally:
        holder.close()
    for answer in answers:
        text = answer.content[0].text
        assert answer.is_error and "is busy" in text and "nothing was written" in text, text
    assert data(after)["recorded"] == 1
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT helpful FROM query_feedback WHERE query_id = %s", (marked,)).fetchall() == [(0,)]
