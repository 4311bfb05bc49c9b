"""Cold hybrid queries an agent can afford: this checkout beside another one, in the same run.

    python bench/hybrid_cold.py [--baseline-rev REV] [--runs 15]

The bundled ``knowledge-base/`` is indexed (``init`` + ``sync``) and embedded with the local model
(``kbindex embed --embed-backend local``: this checkout, the numpy encoder) once; each checkout queries its
own copy of that index, and its own copy of an index without vectors. Both checkouts are byte-compiled
first (as an installed package is). Then, run by run and interleaved, new processes:

* ``query QUESTION --format json --no-stale-check`` on the embedded index (auto method: hybrid), with a
  question never asked before in that index (a question's vector is cached, so a repeat is not cold);
* the same with ``--method sqlite`` (this checkout), the yardstick of the target;
* the same hybrid query with the baseline checkout (``main`` unless ``--baseline-rev`` names another revision;
  one from before the numpy encoder measures the old path, where sentence-transformers loads torch);
* ``query QUESTION`` on the index without vectors, with this checkout and the baseline.

Each child's wall time and peak memory (max RSS, from ``os.wait4``) is recorded. Printed: medians, the
largest RSS, and the targets: hybrid (this) at most 3x the median wall of ``--method sqlite`` and at most
200 MB; the query without vectors within 10% of the baseline's.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
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
TOPICS = ["reward shaping", "Monte Carlo tree search", "policy gradients", "temporal difference learning",
          "fine-tuning a language model", "retrieval-augmented generation", "SQLite full-text search",
          "transformer attention", "unsupervised clustering", "Markov decision processes", "AlphaGo",
          "trial and error learning", "supervised learning", "learning from experience", "Python packaging"]
FORMS = ["what are the pitfalls of {}?", "how would a beginner explain {}?", "when should a team avoid {}?",
         "which trade-offs come with {}?", "what history lies behind {}?", "how is {} evaluated in practice?"]
QUERY = ["--format", "json", "--no-stale-check"]


def questions(n: int) -> list[str]:
    """``n`` different questions (none repeats, so each hybrid query embeds its question)."""
    out = [form.format(topic) for form in FORMS for topic in TOPICS]
    if n > len(out):
        raise SystemExit(f"at most {len(out)} runs")
    return out[:n]


def run_child(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, max RSS in MB, stdout) of one new process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    rss_mb = usage.ru_maxrss / 1024 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    return wall, rss_mb, out.decode("utf-8", "replace")


def _tree_env(tree: Path, work: Path) -> tuple[list[str], dict[str, str]]:
    compileall.compile_dir(str(tree / "kb_indexer"), quiet=1)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": str(work)}
    return [sys.executable, str(tree / "kbindex.py")], env


def _index(cmd: list[str], env: dict[str, str], folder: Path, embed: bool) -> None:
    shutil.copytree(REPO / "knowledge-base", folder / "knowledge-base")
    steps = [["init"], ["sync"]] + ([["embed", "--embed-backend", "local"]] if embed else [])
    for step in steps:
        subprocess.run(cmd + step, env=env, cwd=folder, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def _baseline(rev: str, work: Path) -> Path:
    return checkout(rev, work)


def prepare(work: Path, rev: str) -> dict[str, tuple[list[str], dict[str, str], Path]]:
    """label -> (kbindex command, environment, folder) of every measured configuration."""
    this = work / "this"
    shutil.copytree(REPO, this, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.db*"))
    trees = {"this": _tree_env(this, work), "baseline": _tree_env(_baseline(rev, work), work)}
    embedded = work / "embedded"
    _index(*trees["this"], embedded, embed=True)       # embedded once; each checkout queries its own copy
    out = {}
    for name, (cmd, env) in trees.items():
        shutil.copytree(embedded, work / f"embedded-{name}")
        _index(cmd, env, work / f"plain-{name}", embed=False)
        out[f"hybrid ({name})"] = (cmd, env, work / f"embedded-{name}")
        out[f"no vectors ({name})"] = (cmd, env, work / f"plain-{name}")
    out["sqlite (this)"] = (*trees["this"], work / "embedded-this")
    return out


def _method(stdout: str) -> str:
    try:
        query = json.loads(stdout)["query"]
    except (ValueError, KeyError, TypeError):
        return "?"
    return f"{query.get('method')}{' (fallback: ' + str(query['fallback']) + ')' if query.get('fallback') else ''}"


def measure(configs: dict[str, tuple[list[str], dict[str, str], Path]], runs: int
            ) -> tuple[dict[str, list[tuple[float, float]]], dict[str, set[str]]]:
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in ["python -c pass", *configs]}
    methods: dict[str, set[str]] = {label: set() for label in configs}
    for question in questions(runs):
        wall, rss, _ = run_child([sys.executable, "-c", "pass"], {"PATH": "/usr/bin:/bin"}, REPO)
        samples["python -c pass"].append((wall, rss))
        for label, (cmd, env, folder) in configs.items():
            extra = ["--method", "sqlite"] if label.startswith("sqlite") else []
            wall, rss, out = run_child(cmd + ["query", question, *QUERY, *extra], env, folder)
            samples[label].append((wall, rss))
            methods[label].add(_method(out))
    return samples, methods


def report(samples: dict[str, list[tuple[float, float]]], methods: dict[str, set[str]], runs: int) -> None:
    wall = {label: statistics.median(w for w, _ in s) for label, s in samples.items()}
    rss = {label: max(r for _, r in s) for label, s in samples.items()}
    print(f"{'':<24} {'median wall ms':>15} {'x sqlite':>9} {'max RSS MB':>11}   method   (median of {runs})")
    for label in samples:
        print(f"{label:<24} {wall[label] * 1000:15.1f} {wall[label] / wall['sqlite (this)']:9.2f} "
              f"{rss[label]:11.1f}   {', '.join(sorted(methods.get(label, {'-'})))}")
    ratio = wall["hybrid (this)"] / wall["sqlite (this)"]
    plain = wall["no vectors (this)"] / wall["no vectors (baseline)"]
    print(f"\ntarget: cold hybrid <= 3x sqlite: {ratio:.2f}x ({'met' if ratio <= 3 else 'NOT met'}); "
          f"the old path (baseline) {wall['hybrid (baseline)'] / wall['sqlite (this)']:.2f}x")
    print(f"target: cold hybrid max RSS <= 200 MB: {rss['hybrid (this)']:.1f} MB "
          f"({'met' if rss['hybrid (this)'] <= 200 else 'NOT met'}); the old path {rss['hybrid (baseline)']:.1f} MB")
    print(f"target: no vectors within 10% of the baseline: {plain:.3f}x ({'met' if plain <= 1.10 else 'NOT met'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-rev", default="main", help="a git revision to compare with (default: main)")
    ap.add_argument("--runs", type=int, default=15, help="new questions per configuration")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        configs = prepare(Path(tmp), args.baseline_rev)
        samples, methods = measure(configs, args.runs)
    report(samples, methods, args.runs)


if __name__ == "__main__":
    main()
