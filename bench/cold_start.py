"""Cold start of the agent path, this checkout beside another one, in the same run:

    python bench/cold_start.py --baseline-rev REV [--runs 21]
    python bench/cold_start.py --baseline-src /path/to/older/checkout

Each checkout indexes its own copy of the bundled ``knowledge-base/`` (``init`` + ``sync``), its modules
are byte-compiled first (as an installed package is), then ``kbindex search "reinforcement learning"
--format json`` and ``kbindex query "how does AlphaGo work?" --format json --no-stale-check`` run as new
processes, the two checkouts and ``python -c pass`` interleaved run by run. Printed: the median wall and
CPU time (user + system of the child) of each, and each as a multiple of ``python -c pass``. The
target of a change: the cold ``search``/``query`` ratios not worse than before it.
"""

from __future__ import annotations

import argparse
import compileall
import resource
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
COMMANDS = {
    "search": ["search", "reinforcement learning", "--format", "json"],
    "query": ["query", "how does AlphaGo work?", "--format", "json", "--no-stale-check"],
}


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _prepare(tree: Path, work: Path, name: str) -> tuple[list[str], dict[str, str], Path]:
    """The kbindex command of ``tree``, its environment and a folder holding its synced index."""
    compileall.compile_dir(str(tree / "kb_indexer"), quiet=1)
    folder = work / f"kb-{name}"
    shutil.copytree(REPO / "knowledge-base", folder / "knowledge-base")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": str(work)}
    cmd = [sys.executable, str(tree / "kbindex.py")]
    for step in (["init"], ["sync"]):
        subprocess.run(cmd + step, env=env, cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return cmd, env, folder


def _baseline(args: argparse.Namespace, work: Path) -> Path:
    if args.baseline_src:
        return Path(args.baseline_src).resolve()
    return checkout(args.baseline_rev, work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--baseline-rev", help="a git revision of this repository to compare with")
    group.add_argument("--baseline-src", help="a checkout to compare with")
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        this = work / "this"
        shutil.copytree(REPO, this, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.db*"))
        trees = {"this checkout": _prepare(this, work, "this"),
                 "baseline": _prepare(_baseline(args, work), work, "baseline")}
        bare = [sys.executable, "-c", "pass"]
        times: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
        for _ in range(args.runs):
            times["python -c pass"].append(_timed(bare, {"PATH": "/usr/bin:/bin"}, work))
            for label, (cmd, env, folder) in trees.items():
                for name, argv in COMMANDS.items():
                    times.setdefault(f"{name} ({label})", []).append(_timed(cmd + argv, env, folder))
    wall0 = statistics.median(w for w, _ in times["python -c pass"])
    cpu0 = statistics.median(c for _, c in times["python -c pass"])
    print(f"{'':<28} {'wall ms':>9} {'x pass':>7} {'CPU ms':>9} {'x pass':>7}   (median of {args.runs})")
    for label, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(f"{label:<28} {wall * 1000:9.1f} {wall / wall0:7.2f} {cpu * 1000:9.1f} {cpu / cpu0:7.2f}")


if __name__ == "__main__":
    main()
