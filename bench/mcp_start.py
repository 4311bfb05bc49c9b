"""MCP server start: time from spawning `kbindex mcp` to its `initialize` answer, with the SDK's own client.

    python3 bench/mcp_start.py                 # 9 starts over a small index written in a temp folder
    python3 bench/mcp_start.py --starts 15 --db path/to/kbindex.db

Each start spawns this checkout's `python -m kb_indexer mcp --db ...` over stdio (the SDK's
``stdio_client``) and times until ``ClientSession.initialize()`` returns; the first `tools/list` answer
after it is timed too (the SDK is imported and the tools built by then: `kbindex mcp` answers initialize
before it imports the SDK, see kb_indexer/mcp/early.py). Medians of ``--starts`` runs, printed beside
`python -c pass` and `python -c "import mcp"` (the SDK alone: the floor of any answer the SDK gives) from
the same run. Target: initialize answered ≤ 500 ms after the spawn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
TARGET_MS = 500


def _params(db: Path):
    from mcp.client.stdio import StdioServerParameters
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return StdioServerParameters(command=sys.executable, args=["-m", "kb_indexer", "mcp", "--db", str(db)], env=env,
                                 cwd=str(REPO))   # `python -m` puts the cwd first on sys.path: this checkout


async def one_start(db: Path) -> tuple[float, float]:
    """(ms from spawn to the initialize answer, ms to the first tools/list answer)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    with open(os.devnull, "w") as errlog:
        started = time.perf_counter()
        async with stdio_client(_params(db), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                init = (time.perf_counter() - started) * 1000
                await session.list_tools()
                tools = (time.perf_counter() - started) * 1000
    return init, tools


def cold(cmd: list[str], runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def small_index(root: Path) -> Path:
    """A knowledge base of 50 short documents, synced."""
    from kb_indexer.api import KnowledgeBase
    kb_dir = root / "knowledge-base"
    kb_dir.mkdir(parents=True)
    for i in range(50):
        (kb_dir / f"doc-{i:02d}.md").write_text(f"# Note {i}\n\nReward shaping and policy gradients, note {i}.\n",
                                                encoding="utf-8")
    kb, _ = KnowledgeBase.init(root / "kbindex.db", kb_dir)
    kb.sync()
    kb.close()
    return root / "kbindex.db"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=9)
    ap.add_argument("--db", type=Path, default=None, help="an existing index (default: a small one in a temp folder)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kbindex-mcp-start-") as tmp:
        db = args.db or small_index(Path(tmp))
        asyncio.run(one_start(db))                                    # warm the file cache and .pyc files
        runs = [asyncio.run(one_start(db)) for _ in range(args.starts)]
        py = cold([sys.executable, "-c", "pass"], args.starts)
        sdk = cold([sys.executable, "-c", "import mcp"], args.starts)
    init = statistics.median(r[0] for r in runs)
    tools = statistics.median(r[1] for r in runs)
    print(f"| measure (median of {args.starts} starts) | kbindex mcp | `python -c pass`, same run | target |")
    print("|---|---|---|---|")
    print(f"| spawn to `initialize` answered | {init:.0f} ms | {py:.0f} ms | ≤ {TARGET_MS} ms |")
    print(f"| spawn to first `tools/list` answered | {tools:.0f} ms | {py:.0f} ms; `import mcp` alone {sdk:.0f} ms | – |")
    print(f"initialize runs (ms): {', '.join(f'{r[0]:.0f}' for r in runs)}", file=sys.stderr)
    return 0 if init <= TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
