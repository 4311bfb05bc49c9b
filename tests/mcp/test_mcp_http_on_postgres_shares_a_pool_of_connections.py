"""`kbindex mcp --transport http` on a PostgreSQL index: many concurrent tool calls (the SDK's own client over
loopback HTTP) all succeed, and the server holds a small pool of connections (at most 8, counted by the server
itself in pg_stat_activity) that stays open between requests instead of one connection per request."""

from __future__ import annotations

import threading
import time

import anyio
import psycopg
import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.config import DbUrl
from tests.mcp_client import data
from tests.mcp_http_server import TOKEN, client, served

POOL_MAX = 8   # kb_indexer.store.pg.pool.MAX_SIZE, stated here as the behaviour promised
CLIENTS, CALLS = 4, 6   # 24 kb_query calls: 4 clients at once, each with its 6 calls in flight at once
QUESTIONS = ["reinforcement learning reward", "neural network training", "policy gradient",
             "knowledge base search", "keyword similarity", "reward shaping in games"]


def _server_connections(admin: str, database: str) -> int:
    """Client connections to ``database`` other than the one asking."""
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
                           "AND backend_type = 'client backend'", (database,)).fetchone()
    return int(row[0]) if row else 0


def _gone(admin: str, database: str) -> bool:
    """Whether the stopped server's connections leave: a backend whose client has exited is listed in
    pg_stat_activity until it notices and ends, which on a busy machine can take a moment (waited for, 30 s
    at most)."""
    deadline = time.monotonic() + 30
    while _server_connections(admin, database):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class _Watch(threading.Thread):
    """Samples the server's connection count until stopped; ``peak`` is the largest seen."""

    def __init__(self, admin: str, database: str):
        super().__init__(daemon=True)
        self.admin, self.database, self.peak = admin, database, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, _server_connections(self.admin, self.database))
            self.stop.wait(0.02)


async def _agent(url: str, out: list) -> None:
    async with client(url, TOKEN) as session:
        async def ask(question: str) -> None:
            out.append(data(await session.call_tool("kb_query", {"question": question, "limit": 3})))
        async with anyio.create_task_group() as tg:
            for question in QUESTIONS[:CALLS]:
                tg.start_soon(ask, question)


@pytest.fixture
def pg_kb(project, pg_url):
    handle, _ = KnowledgeBase.init(DbUrl(pg_url), project / "knowledge-base")
    assert handle.sync()["errors"] == []
    handle.close()
    return pg_url


def test_concurrent_queries_share_at_most_eight_server_connections(pg_kb, pg_server):
    database = pg_kb.partition("?")[0].rsplit("/", 1)[1]
    admin = pg_server.get_uri()
    found: list = []

    async def main(url: str) -> None:
        with anyio.fail_after(240):   # a hang fails the test instead of blocking the suite
            async with anyio.create_task_group() as tg:
                for _ in range(CLIENTS):
                    tg.start_soon(_agent, url, found)

    with served(pg_kb, env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        watch = _Watch(admin, database)
        watch.start()
        try:
            anyio.run(main, server.url)
        finally:
            watch.stop.set()
            watch.join()
        after = _server_connections(admin, database)
    assert len(found) == CLIENTS * CALLS
    assert all(r["results"] for r in found)   # every call answered from the index
    assert len({r["query_id"] for r in found}) == len(QUESTIONS[:CALLS])   # one history row per question
    assert 1 <= watch.peak <= POOL_MAX
    assert 1 <= after <= POOL_MAX   # the pool keeps its connections between requests
    assert "Traceback" not in server.stderr
    assert _gone(admin, database)   # the server gave them all back when it stopped
