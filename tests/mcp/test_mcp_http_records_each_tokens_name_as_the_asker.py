"""`kbindex mcp --transport http` with named tokens (`NAME:TOKEN` lines in --token-file; a line without a name is
the token "mcp"): the queries, attempts and feedback marks a client's tool calls record name its token's name as
the asker (on PostgreSQL `role/name`, the server's login role and the name), in `history --format json`; two clients
with different tokens calling at the same time (the SDK's own client over loopback HTTP, many calls in flight)
never get each other's name, and no token is logged. Without a token the server records its own asker. On both
engines."""

from __future__ import annotations

import anyio
import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.store.engine import is_postgres
from tests.mcp_client import data
from tests.mcp_http_server import client, served

pytestmark = pytest.mark.both_engines

TOKENS = {"ann": "ann-token-" + "Qa7z" * 8, "bob": "bob-token-" + "Wx3k" * 8}
PLAIN = "plain-token-" + "Lm9p" * 8   # a line without a name: the token "mcp"
QUESTIONS = {"ann": ["reinforcement learning reward", "neural network training", "policy gradient"],
             "bob": ["knowledge base search", "keyword similarity", "reward shaping in games"],
             "mcp": ["alphago architecture"]}


def _token_file(tmp_path):
    path = tmp_path / "mcp-tokens"
    path.write_text("# the team's MCP clients\n" + "".join(f"{n}:{t}\n" for n, t in TOKENS.items())
                    + f"\n{PLAIN}\n", encoding="utf-8")
    path.chmod(0o600)
    return path


async def _agent(url: str, name: str, token: str, out: dict) -> None:
    async with client(url, token) as session:
        async def ask(question: str) -> None:   # every call of a client in flight at once
            found = data(await session.call_tool("kb_query", {"question": question, "limit": 3}))
            helpful = [r["filepath"] for r in found["results"][:1]]
            await session.call_tool("kb_feedback", {"query_id": found["query_id"], "helpful": helpful})
            out[found["query_id"]] = name
        async with anyio.create_task_group() as tg:
            for question in QUESTIONS[name]:
                tg.start_soon(ask, question)


def _expected(kb, name: str) -> str:
    """What an index records asked on behalf of ``name``: the name (SQLite), ``role/name`` (PostgreSQL)."""
    if not is_postgres(kb.conn):
        return name
    return f"{kb.conn.execute('SELECT session_user').fetchone()[0]}/{name}"


def test_each_clients_history_and_marks_name_its_tokens_name(kb, run, tmp_path):
    asked: dict[int, str] = {}

    async def main(url: str) -> None:
        with anyio.fail_after(240):   # a hang fails the test instead of blocking the suite
            async with anyio.create_task_group() as tg:
                for name, token in (*TOKENS.items(), ("mcp", PLAIN)):
                    tg.start_soon(_agent, url, name, token, asked)

    with served(kb.db_path, "--token-file", str(_token_file(tmp_path))) as server:
        anyio.run(main, server.url)
    assert sorted(asked.values()) == sorted(n for n in QUESTIONS for _ in QUESTIONS[n])
    target = str(getattr(kb.db_path, "url", kb.db_path))
    listed = run("history", "--db", target, "--limit", "0", "--format", "json").json()["queries"]
    assert {q["query_id"]: q["asker"] for q in listed} == {qid: _expected(kb, n) for qid, n in asked.items()}
    for qid, name in asked.items():
        detail = run("history", str(qid), "--db", target, "--format", "json").json()
        assert [a["asker"] for a in detail["attempts"]] == [_expected(kb, name)]
        assert [f["asker"] for f in detail["feedback"]] == [_expected(kb, name)]
    for token in (*TOKENS.values(), PLAIN):
        assert token not in server.stderr
    assert "3 names" in server.stderr and "Traceback" not in server.stderr


def test_without_a_token_the_server_records_its_own_asker(kb, run):
    async def main(url: str) -> int:
        async with client(url) as session:
            found = data(await session.call_tool("kb_query", {"question": "policy gradient", "limit": 3}))
            return int(found["query_id"])

    with served(kb.db_path) as server:
        qid = anyio.run(main, server.url)
    with KnowledgeBase.open(kb.db_path) as handle:
        own = handle.conn.execute("SELECT kb_asker()").fetchone()[0]
        assert handle.learning.history(qid)["asker"] == own


def test_a_connection_given_back_to_the_pool_asks_for_no_one(kb):
    """On PostgreSQL the name is a setting of the session (of a connection of its own, or one lent by the pool):
    a pooled connection forgets it when given back."""
    with KnowledgeBase.open(kb.db_path) as handle:
        own = handle.conn.execute("SELECT kb_asker()").fetchone()[0]
    with KnowledgeBase.on_behalf("bob"), KnowledgeBase.open(kb.db_path) as handle:
        assert handle.conn.execute("SELECT kb_asker()").fetchone()[0] == _expected(kb, "bob")
    with KnowledgeBase.serving(kb.db_path):
        with KnowledgeBase.on_behalf("ann"), KnowledgeBase.open(kb.db_path) as handle:
            assert handle.conn.execute("SELECT kb_asker()").fetchone()[0] == _expected(kb, "ann")
        for _ in range(3):   # whichever connection of the pool is lent
            with KnowledgeBase.open(kb.db_path) as handle:
                assert handle.conn.execute("SELECT kb_asker()").fetchone()[0] == own
