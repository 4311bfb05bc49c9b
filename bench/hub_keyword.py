"""A keyword with thousands of relations, this checkout beside another one, in the same run:

    python bench/hub_keyword.py --baseline-rev main [--relations 1000,10000,50000] [--runs 3]
    python bench/hub_keyword.py --baseline-src /path/to/older/checkout

For each relation count N, a knowledge base of 20 tagged notes whose ``similarities.json`` relates ``hub`` to
N distinct keywords (synonym, abbreviation, narrower, related_concept, broader; scores 0.7-1.0) and ``few`` to
5; each checkout indexes its own copy (``init`` + ``sync``, not timed). Then, as new processes, the two
checkouts interleaved run by run: ``kbindex query -k hub``, ``query -k few``, ``similar hub`` and
``similar few``, and ``query`` of 20 of hub's keywords two hops deep (``-d 2``: each reaches hub in one hop, then
all of hub's relations) (``--format json``; the queries with ``--no-stale-check``). Printed: the median wall time
of each, its median CPU time (user + system), its peak resident memory (the most of any run) and the bytes it
printed. A command that runs past ``--timeout`` is shown as such.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.revision import checkout  # noqa: E402 (after the path is set)

TYPES = ["synonym", "abbreviation", "narrower", "related_concept", "broader"]
COMMANDS = {
    "query -k hub": ["query", "-k", "hub", "--format", "json", "--no-stale-check"],
    "query -k few": ["query", "-k", "few", "--format", "json", "--no-stale-check"],
    "similar hub": ["similar", "hub", "--format", "json"],
    "similar few": ["similar", "few", "--format", "json"],
    "query 20 -d 2": ["query", *(a for i in range(20) for a in ("-k", f"hub term {i * 7:06d}")), "-d", "2",
                      "--format", "json", "--no-stale-check"],
}


def write_kb(folder: Path, n: int, seed: int = 7) -> None:
    """The knowledge base of ``n`` relations of ``hub`` (see the module docstring)."""
    rng = random.Random(seed)
    kb = folder / "knowledge-base"
    kb.mkdir(parents=True)
    sims = [{"keyword1": "hub", "keyword2": f"hub term {i:06d}", "type": TYPES[i % len(TYPES)],
             "context": f"hub relation number {i}", "score": round(0.7 + 0.3 * rng.random(), 3),
             "directional": False} for i in range(n)]
    sims += [{"keyword1": "few", "keyword2": f"few term {i}", "type": "synonym", "context": "few", "score": 0.9,
              "directional": False} for i in range(5)]
    (kb / "similarities.json").write_text(json.dumps({"similarities": sims}), encoding="utf-8")
    for i in range(20):
        tags = ", ".join(["hub", f"hub term {i * 7:06d}", "few", f"few term {i % 5}"])
        (kb / f"doc-{i:02d}.md").write_text(f"---\nkeywords: [{tags}]\n---\n# Doc {i}\n\nAbout hub things {i}.\n",
                                           encoding="utf-8")


Sample = tuple[float | None, float, int, int]   # wall s (None: past the timeout), CPU s, peak RSS KiB, bytes printed


def _timed(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> Sample:
    """One child process: its wall and CPU time (user + system), its peak RSS and the bytes it printed on stdout
    (reaped with ``os.wait4``, which gives that child's own resource use)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                return None, 0.0, 0, 0
            time.sleep(0.01)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.seek(0, 2)


def _prepare(tree: Path, source: Path, work: Path, name: str) -> tuple[list[str], dict[str, str], Path]:
    """The kbindex command of ``tree``, its environment and its synced copy of the knowledge base ``source``."""
    folder = work / name
    shutil.copytree(source, folder)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": str(work)}
    cmd = [sys.executable, str(tree / "kbindex.py")]
    for step in (["init"], ["sync"]):
        subprocess.run(cmd + step, env=env, cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return cmd, env, folder


def _cell(samples: list[Sample], timeout: float) -> str:
    """Median wall and CPU milliseconds, the peak RSS and the bytes printed (the most of any run)."""
    if any(wall is None for wall, _, _, _ in samples):
        return f"> {timeout:.0f} s"
    wall = statistics.median(w for w, _, _, _ in samples if w is not None)
    cpu = statistics.median(c for _, c, _, _ in samples)
    rss = max(r for _, _, r, _ in samples) / 1024
    return f"{wall * 1000:8.0f} {cpu * 1000:8.0f} {rss:6.0f} {max(b for _, _, _, b in samples):>11,}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--baseline-rev", help="a git revision of this repository to compare with")
    group.add_argument("--baseline-src", help="a checkout to compare with")
    ap.add_argument("--relations", default="1000,10000,50000", help="relation counts of hub, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one command may take")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        this = work / "this"
        shutil.copytree(REPO, this, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.db*", ".venv"))
        base = Path(args.baseline_src).resolve() if args.baseline_src else checkout(args.baseline_rev, work)
        trees = {"this checkout": this, "baseline": base}
        for tree in trees.values():
            compileall.compile_dir(str(tree / "kb_indexer"), quiet=1)
        print(f"{'':>24} {'this checkout':^36} {'baseline':^36}")
        print(f"{'relations':>9}  {'command':<13}" + f" {'wall ms':>8} {'CPU ms':>8} {'MiB':>6} {'bytes':>11}" * 2
              + f"   (median of {args.runs}; MiB: peak RSS)")
        for n in (int(x) for x in args.relations.split(",")):
            source = work / f"source-{n}"
            write_kb(source, n)
            ready = {label: _prepare(tree, source, work, f"kb-{n}-{i}")
                     for i, (label, tree) in enumerate(trees.items())}
            times: dict[tuple[str, str], list[Sample]] = {}
            for _ in range(args.runs):
                for name, argv in COMMANDS.items():
                    for label, (cmd, env, folder) in ready.items():
                        times.setdefault((name, label), []).append(_timed(cmd + argv, env, folder, args.timeout))
            for name in COMMANDS:
                cells = [_cell(times[(name, label)], args.timeout) for label in trees]
                print(f"{n:>9,}  {name:<13} {cells[0]:>36} {cells[1]:>36}", flush=True)


if __name__ == "__main__":
    main()
