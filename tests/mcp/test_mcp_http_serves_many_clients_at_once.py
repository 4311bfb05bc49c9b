"""`kbindex mcp --transport http`: several MCP clients (the SDK's own, over loopback HTTP) in sessions open at
the same time, each listing the tools, querying and giving feedback; every feedback mark lands in the index."""

from __future__ import annotations

import anyio

from kb_indexer.api import KnowledgeBase
from tests.mcp_client import data
from tests.mcp_http_server import TOKEN, client, served

TOOLS = {"kb_query", "kb_get", "kb_similar", "kb_feedback", "skills_match"}
# Each agent its own questions: a question asked again is the same query (history keeps one per question).
QUESTIONS = {"alice": ["reinforcement learning reward", "neural network training", "policy gradient"],
             "bob": ["knowledge base search", "keyword similarity", "reward shaping in games"]}


async def _agent(url: str, name: str, ready: list[str], go: anyio.Event, out: dict) -> None:
    async with client(url, TOKEN) as session:
        ready.append(name)
        if len(ready) == 2:
            go.set()
        await go.wait()   # both sessions are open before either calls a tool
        tools = {t.name for t in (await session.list_tools()).tools}
        rounds = []
        for question in QUESTIONS[name]:
            found = data(await session.call_tool("kb_query", {"question": question, "limit": 3}))
            helpful = [r["filepath"] for r in found["results"][:1]]
            marked = data(await session.call_tool("kb_feedback", {"query_id": found["query_id"],
                                                                  "helpful": helpful}))
            rounds.append((found["query_id"], helpful, marked))
        out[name] = (tools, rounds)


def test_two_clients_query_and_give_feedback_at_the_same_time(kb):
    out: dict = {}

    async def main(url: str) -> None:
        ready: list[str] = []
        go = anyio.Event()
        with anyio.fail_after(240):   # a hang fails the test instead of blocking the suite
            async with anyio.create_task_group() as tg:
                for name in QUESTIONS:
                    tg.start_soon(_agent, url, name, ready, go, out)

    with served(kb.db_path, env={"KBINDEX_MCP_TOKEN": TOKEN}) as server:
        anyio.run(main, server.url)
    assert set(out) == {"alice", "bob"}
    rounds = [r for name in out for r in out[name][1]]
    assert all(out[name][0] == TOOLS for name in out)
    assert len({query_id for query_id, _, _ in rounds}) == len(rounds) == 6  # every query recorded apart
    assert all(helpful for _, helpful, _ in rounds)   # each question found something to mark
    with KnowledgeBase.open(kb.db_path) as handle:
        for query_id, helpful, marked in rounds:
            assert marked == {"query_id": query_id, "recorded": 1}
            stored = handle.learning.history(query_id)["feedback"]
            assert [(f["filepath"], f["helpful"]) for f in stored] == [(helpful[0], True)]
    assert server.stdout == ""   # nothing but the protocol, and that goes over HTTP
    assert "Traceback" not in server.stderr
