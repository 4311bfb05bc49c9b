"""Sync speed on documents with YAML front matter (and without), beside an older checkout, same run.

    python bench/front_matter_sync.py [--docs 3000] [--runs 3] [--share 1.0] [--baseline-src DIR]

The generator draws Cranfield words (as bench/scale.py): 300-1,500 words a document, and for a share of
the documents (``--share``, default all) a front-matter block as people write them: a title, a date, a
flow list of tags with a comment, a block list of keywords, a folded description. No keywords files.
Each run syncs a fresh index with ``python -m kb_indexer sync`` (this checkout, then ``--baseline-src`` if
given: e.g. ``git archive <commit> | tar -x -C /tmp/base``), alternating; the medians of wall-clock and
CPU time (the sync and its reader processes: steadier than wall-clock on a shared machine) are reported.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scale import ENV  # noqa: E402
from bench.scale_corpus import Vocabulary  # noqa: E402


def generate(kb: Path, docs: int, share: float, vocab: Vocabulary, seed: int = 11) -> None:
    rng = random.Random(seed)
    keywords = vocab.keywords[:400]
    for i in range(docs):
        words = vocab.sample(rng, rng.randint(300, 1500))
        paras = [" ".join(words[j:j + 80]) + "." for j in range(0, len(words), 80)]
        title = " ".join(words[:6]).capitalize()
        head = ""
        if rng.random() < share:
            tags = rng.sample(keywords, rng.randint(2, 5))
            block = rng.sample(keywords, rng.randint(2, 6))
            head = ("---\n"
                    f'title: "{title}: notes"\n'
                    f"date: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}\n"
                    f"tags: [{', '.join(tags[:-1])}, \"{tags[-1]}\"]   # topics\n"
                    "keywords:\n" + "".join(f"  - {k}\n" for k in block) +
                    "description: >\n"
                    f"  {' '.join(words[6:18])}\n  {' '.join(words[18:30])}\n"
                    "---\n")
        path = kb / f"area-{i % 50:02d}" / f"doc-{i:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(head + f"# {title}\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sync_seconds(src: Path, root: Path, tag: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds (the sync's process and its reader processes) of one fresh sync."""
    db = root / f"{tag}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    env = dict(ENV, PYTHONPATH=str(src.resolve()), KBINDEX_DB=str(db))
    cmd = [sys.executable, "-m", "kb_indexer"]
    subprocess.run(cmd + ["init", "--kb", str(root / "knowledge-base"), "--format", "json"], cwd=root, env=env,
                   check=True, capture_output=True)
    t, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(cmd + ["sync", "--format", "json"], cwd=root, env=env, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - t, _cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"sync with {src} failed: {proc.stderr[-1500:]}")
    return elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--share", type=float, default=1.0, help="share of documents with front matter")
    ap.add_argument("--baseline-src", type=Path, help="an older checkout to compare with")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbindex-fm-") as tmp:
        root = Path(tmp)
        generate(root / "knowledge-base", args.docs, args.share, Vocabulary())
        sources = {"this checkout": REPO} | ({"baseline": args.baseline_src} if args.baseline_src else {})
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in sources}
        for _ in range(args.runs):
            for name, src in sources.items():
                times[name].append(sync_seconds(src, root, name.replace(" ", "-")))
        print(f"{args.docs} documents, {args.share:.0%} with front matter, {args.runs} runs, "
              f"{os.cpu_count()} CPUs")
        for name, values in times.items():
            wall, cpu = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
            print(f"  {name:14s} sync {wall:6.2f} s  {args.docs / wall:7.0f} docs/s  CPU {cpu:6.2f} s  "
                  f"({1e6 * cpu / args.docs:5.0f} us/doc)  (wall, CPU per run: "
                  f"{', '.join(f'{w:.2f}/{c:.2f}' for w, c in values)})")


if __name__ == "__main__":
    main()
