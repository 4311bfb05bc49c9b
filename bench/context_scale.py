#!/usr/bin/env python3
"""How `kbindex context compress --no-llm` scales with the conversation, and whether huge messages stay in the window.

Builds conversation files of N messages of about 500 characters (deterministic: a seeded generator of
user / assistant turns with the things the extractive summariser looks for — preferences, decisions,
numbers, names, paths — among filler), then times the real command on each, in a subprocess:

    python -m kb_indexer context compress --no-llm --input FILE --window W --db EMPTY_INDEX

for this checkout and, with ``--baseline-src``, for an older checkout (``PYTHONPATH=SRC``) in the same
run. The window is a tenth of the conversation's estimated tokens (at least 8,192), so every run
compresses at the 95% level. A baseline run is skipped above ``--baseline-max`` messages, or once one of
its runs took longer than ``--baseline-cap`` seconds (said in the table).

A second case puts a few 1 MB messages at the end of an ordinary conversation (the verbatim tail, the
latest user message) and reports the result's estimated tokens against the window.

    python bench/context_scale.py --messages 1000,10000,100000 --baseline-src /work/base
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

SUBJECTS = ("the ingest job", "the nightly export", "the search index", "the billing report", "the cache layer",
            "the staging cluster", "the parser", "the login page", "the queue worker", "the dashboard")
NAMES = ("Dana Whitfield", "Omar Reyes", "Priya Natarajan", "Lena Vogel", "Kenji Mori", "Ada Brooks")
TOOLS = ("PostgreSQL", "Redis", "SQLite", "Kafka", "FastAPI", "Terraform", "Grafana", "Celery")
PATHS = ("src/ingest/reader.py", "config/prod.yaml", "docs/runbook.md", "deploy/k8s/web.yaml", "~/notes/todo.txt")
FILLER = ("That sounds reasonable to me, let me think about it a little more before we move on.",
          "Here is some more background on how the pieces fit together in practice.",
          "In general the approach works well when the inputs are small and the team is familiar with it.",
          "There are a few trade-offs worth keeping in mind, mostly around maintenance and cost.",
          "It depends on the workload, but most setups of this kind behave the same way.",
          "Thanks, that helps a lot.", "Ok, makes sense.", "Hmm, go on.",
          "The usual advice is to measure first and change one thing at a time.",
          "Another option is to leave it as it is and revisit it next quarter.")


def _fact(rng: random.Random) -> str:
    s, n, t, p = rng.choice(SUBJECTS), rng.choice(NAMES), rng.choice(TOOLS), rng.choice(PATHS)
    return rng.choice((
        f"I prefer {t} for {s}, not the old setup.",
        f"We decided to move {s} to {t} instead of rewriting it.",
        f"{n} owns {s} from now on, so ask them first.",
        f"The latency of {s} dropped to {rng.randint(20, 900)} ms after the change to {p}.",
        f"Always keep {p} in sync with {s} before a release.",
        f"Our budget for {s} is {rng.randint(2, 90)},{rng.randint(100, 999)} USD per month.",
        f"Accuracy reached {rng.randint(60, 99)}.{rng.randint(0, 9)}% on run {rng.randint(100, 9999)} with {t}.",
    ))


def message(rng: random.Random, role: str, size: int = 500) -> str:
    """About ``size`` characters: sentences of filler with a fact now and then."""
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < size:
        parts.append(_fact(rng) if rng.random() < 0.3 else rng.choice(FILLER))
    text = " ".join(parts)[:size].rsplit(" ", 1)[0]
    return text.rstrip(",;") + ("?" if role == "user" and rng.random() < 0.3 else ".")


def conversation(n: int, seed: int = 7, size: int = 500) -> list[dict[str, Any]]:
    """A system message, then user / assistant turns, ending on a user message: ``n`` messages."""
    rng = random.Random(seed)
    out = [{"role": "system", "content": "You are a helpful assistant for an operations team."}]
    for i in range(n - 1):
        role = "user" if (n - 2 - i) % 2 == 0 else "assistant"
        out.append({"role": role, "content": message(rng, role, size)})
    return out


def huge_tail(n: int = 200, huge: int = 3, chars: int = 1_000_000) -> list[dict[str, Any]]:
    """An ordinary conversation whose last ``huge`` messages (the verbatim tail, ending on the latest user
    message) are ``chars`` characters each."""
    msgs = conversation(n)
    rng = random.Random(11)
    for m in msgs[-huge:]:
        block = message(rng, m["role"], 2000)
        m["content"] = (block + " ") * (chars // (len(block) + 1)) + block[: chars % (len(block) + 1)]
    return msgs


def estimate(messages: list[dict[str, Any]]) -> int:
    sys.path.insert(0, str(REPO))
    from kb_indexer.tokens import messages_tokens
    return messages_tokens(messages)


def run_cli(src: Path, path: Path, window: int, db: Path, timeout: float) -> dict[str, Any]:
    """One ``context compress`` in a subprocess of ``src``: seconds, result tokens, stats (None on timeout)."""
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "kb_indexer", "context", "compress", "--no-llm", "--input", str(path),
           "--window", str(window), "--db", str(db), "--format", "json"]
    start, used = time.perf_counter(), _children_cpu()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=src)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "timeout": True}
    seconds, cpu = time.perf_counter() - start, _children_cpu() - used
    if proc.returncode != 0:
        raise SystemExit(f"{src}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout)
    return {"seconds": seconds, "cpu": cpu, "stats": out["stats"], "timeout": False,
            "result_tokens": estimate(out["messages"]) if out["messages"] else 0}


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes: the figure that a loaded machine
    changes least."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def make_index(src: Path, where: Path) -> Path:
    db = where / "kb.db"
    env = dict(os.environ, PYTHONPATH=str(src))
    kb = where / "kb"
    kb.mkdir()
    subprocess.run([sys.executable, "-m", "kb_indexer", "init", "--kb", str(kb), "--db", str(db)], env=env, check=True,
                   capture_output=True, cwd=src)
    return db


def fmt(r: dict[str, Any] | None) -> str:
    if r is None:
        return "skipped"
    if r["timeout"]:
        return "over the cap"
    return f"{r['cpu']:.1f} s ({r['seconds']:.1f} s)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", default="1000,10000,100000", help="conversation sizes, comma-separated")
    ap.add_argument("--baseline-src", type=Path, help="an older checkout, run as PYTHONPATH=SRC")
    ap.add_argument("--baseline-max", type=int, default=10_000, help="no baseline run above this many messages")
    ap.add_argument("--baseline-cap", type=float, default=180.0, help="seconds a baseline run may take")
    ap.add_argument("--huge", type=int, default=3, help="1 MB messages at the end for the window case (0: none)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.messages.split(",") if s.strip()]
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        db = make_index(REPO, where)
        base_slow = False
        print("CPU seconds of the command (wall-clock in brackets):\n")
        print("| messages | tokens in | window | this checkout | result tokens | baseline | baseline result tokens |")
        print("|---|---|---|---|---|---|---|")
        for n in sizes:
            msgs = conversation(n)
            path = where / f"conv{n}.json"
            path.write_text(json.dumps({"messages": msgs}))
            tokens = estimate(msgs)
            window = max(8192, tokens // 10)
            mine = run_cli(REPO, path, window, db, timeout=3600)
            base = None
            if args.baseline_src and n <= args.baseline_max and not base_slow:
                base = run_cli(args.baseline_src, path, window, db, timeout=args.baseline_cap)
                base_slow = base["timeout"]
            rows.append(f"| {n:,} | {tokens:,} | {window:,} | {fmt(mine)} | {mine['result_tokens']:,} | {fmt(base)} | "
                        f"{format(base['result_tokens'], ',') if base and not base['timeout'] else '–'} |")
            print(rows[-1], flush=True)
        if args.huge:
            msgs = huge_tail(huge=args.huge)
            path = where / "huge.json"
            path.write_text(json.dumps({"messages": msgs}))
            window = 8192
            print(f"\n{args.huge} messages of 1 MB at the end of a {len(msgs)}-message conversation "
                  f"({estimate(msgs):,} tokens), window {window:,}:\n")
            print("| checkout | CPU s (wall) | result tokens | result / window | over_window | cut messages |")
            print("|---|---|---|---|---|---|")
            for label, src in (("this checkout", REPO), ("baseline", args.baseline_src)):
                if src is None:
                    continue
                r = run_cli(src, path, window, db, timeout=args.baseline_cap if src != REPO else 3600)
                if r["timeout"]:
                    print(f"| {label} | over the cap | – | – | – | – |")
                    continue
                cut = r["stats"].get("cut_messages")
                print(f"| {label} | {fmt(r)} | {r['result_tokens']:,} | {r['result_tokens'] / window:.2f} | "
                      f"{r['stats']['over_window']} | {len(cut) if cut is not None else '–'} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
