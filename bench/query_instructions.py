#!/usr/bin/env python3
"""CPU instructions per ``KnowledgeBase.query`` on Cranfield, this checkout beside another, counted by valgrind.

    python3 bench/query_instructions.py --baseline-rev REV [--queries 40] [--limit 100,10]

Wall-clock queries/s (``bench/ir_eval.py``) moves by 10-20% with whatever else runs on the machine; an
instruction count does not. For each checkout and limit this builds the same Cranfield knowledge base (the
real ``sync``, as ``bench/ir_eval.py`` does), then runs ``valgrind --tool=callgrind`` twice on a fresh copy
of it: a process that opens the index and asks 10 warm-up questions, and one that asks ``--queries`` more
(``method=fulltext``, the ``--limit``, recorded in the history as ``kbindex query`` does). The difference
divided by ``--queries`` is the instructions of one question, start-up excluded. Memory stalls and I/O are
not counted: use it to compare code, and ``bench/ir_eval.py`` for the speed a user sees.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)
from bench.revision import checkout  # noqa: E402 (after the path is set)
DATA = data_dir("cranfield")

# Runs in a child process with the checkout under test first on sys.path.
CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kb_indexer.api import QueryOptions
from bench.cranfield import build_kb, load
corpus, queries, _ = load(Path(sys.argv[2]))
kb, *_ = build_kb(corpus, Path(sys.argv[3]))
options = QueryOptions(method="fulltext", limit=int(sys.argv[5]))
for q in queries[:10] + queries[10:10 + int(sys.argv[4])]:
    kb.query(q["text"], options=options)
"""


def _instructions(tree: Path, kb: Path, work: Path, queries: int, limit: int) -> int:
    run = work / "run"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(kb, run)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", CHILD,
           str(tree), str(DATA), str(run), str(queries), str(limit)]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or not found:
        raise SystemExit(f"valgrind run failed in {tree}:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-rev", required=True, help="a git revision of this repository to compare with")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--limit", default="100,10", help="comma-separated result limits")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"this checkout": REPO, f"baseline {args.baseline_rev}": checkout(args.baseline_rev, work)}
        print(f"{'':<24} {'limit':>6} {'M instructions/question':>24}")
        for label, tree in trees.items():
            kb = work / f"kb-{len(label)}-{abs(hash(label))}"
            subprocess.run([sys.executable, "-c", CHILD, str(tree), str(DATA), str(kb), "0", "10"], check=True,
                           env={**os.environ, "PYTHONPATH": str(tree)})   # builds and syncs the KB once
            for limit in (int(x) for x in args.limit.split(",")):
                base = _instructions(tree, kb, work, 0, limit)
                more = _instructions(tree, kb, work, args.queries, limit)
                print(f"{label:<24} {limit:>6} {(more - base) / args.queries / 1e6:>24.2f}", flush=True)


if __name__ == "__main__":
    main()
