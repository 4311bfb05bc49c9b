"""Vectors at scale: cold and in-process `query --method hybrid` beside `--method fulltext`, same run.

    python3 bench/semantic_scale.py                    # 10,000 realistic documents (bench/scale.py's generator)
    python3 bench/semantic_scale.py --docs 20000 --runs 7

The knowledge base is bench/scale.py's (Cranfield word frequencies, 300–1,500 words a document), synced,
then embedded with kbindex's own `embed` code path and the test suite's deterministic embedding double
(`fake-embed`, 384 dimensions: tests/fake_llm.py, loaded as a plugin). The double stands in for a model
so that what is timed is kbindex's part: reading the vectors, the brute-force cosine and the fusion; with
a real backend a cold query also pays for embedding the question (cached after the first time) and, for
`local`, for importing torch. Cold queries run a `python -m kb_indexer query` process per question,
as an agent does. Three columns, one run:

* fulltext: `--method fulltext` (the baseline);
* hybrid: `--method hybrid` as it ships (the packed vectors memory-mapped from `<index>.vectors/`);
* hybrid, BLOB read: the same with that folder made impossible (a file in its place), so every query
  copies the packed vectors out of SQLite, as before the vectors file existed.

Target: cold hybrid ≤ 2× cold fulltext at 10k documents; in-process hybrid p50 ≤ 30 ms at 20k.
"""

from __future__ import annotations

import argparse
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
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.scale_corpus import Vocabulary, generate  # noqa: E402

PLUGIN = REPO / "tests" / "fake_llm.py"
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPATH": str(REPO), "KBINDEX_LLM_PLUGINS": str(PLUGIN)}
EMBED = ["--embed-backend", "fake-embed", "--embed-model", "fake-embed-384"]


def build(root: Path, docs: int, vocab: Vocabulary) -> dict:
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.llm.config import EmbedOptions

    os.environ["KBINDEX_LLM_PLUGINS"] = str(PLUGIN)
    generate(root, docs, vocab)
    kb, _ = KnowledgeBase.init(root / "kbindex.db", root / "knowledge-base")
    t = time.perf_counter()
    kb.sync()
    synced = time.perf_counter() - t
    t = time.perf_counter()
    out = kb.embeddings.embed(embed=EmbedOptions(backend="fake-embed", model="fake-embed-384"), batch=256)
    embedded = time.perf_counter() - t
    chunks = kb.conn.execute("SELECT count(*) FROM embedding_chunks").fetchone()[0]
    kb.close()
    return {"sync_s": synced, "embed_s": embedded, "chunks": chunks, "embed": out}


def cold(root: Path, questions: list[str], method: str) -> float:
    times = []
    for q in questions:
        cmd = [sys.executable, "-m", "kb_indexer", "query", q, "--method", method, "--format", "json",
               "--no-stale-check", *EMBED]
        t = time.perf_counter()
        subprocess.run(cmd, cwd=root, capture_output=True, check=True, env=ENV)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def in_process(root: Path, questions: list[str], method: str) -> tuple[float, float]:
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.llm.config import EmbedOptions

    kb = KnowledgeBase.open(root / "kbindex.db")
    opts = EmbedOptions(backend="fake-embed", model="fake-embed-384")
    for q in questions[:3]:
        kb.query(q, options=QueryOptions(method=method, record=False), embed=opts)
    times = []
    for q in questions:
        t = time.perf_counter()
        out = kb.query(q, options=QueryOptions(method=method, record=False), embed=opts)
        times.append((time.perf_counter() - t) * 1000)
        assert out["query"]["fallback"] is None, out["query"]
    kb.close()
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, int(0.95 * len(times)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=9, help="cold questions per method")
    ap.add_argument("--queries", type=int, default=50, help="in-process questions per method")
    ap.add_argument("--keep", type=Path, help="build the knowledge base here, or reuse the one built there before")
    args = ap.parse_args()
    vocab = Vocabulary()
    questions = [q["text"] for q in vocab.queries]
    with tempfile.TemporaryDirectory(prefix="kbindex-semantic-") as tmp:
        root = args.keep or Path(tmp)
        if args.keep and (root / "kbindex.db").exists():
            built = {"sync_s": float("nan"), "embed_s": float("nan"), "chunks": _chunks(root)}
        else:
            root.mkdir(parents=True, exist_ok=True)
            built = build(root, args.docs, vocab)
        cold_q = questions[:args.runs]
        subprocess.run([sys.executable, "-m", "kb_indexer", "query", "warm-up", "--method", "hybrid", *EMBED],
                       cwd=root, capture_output=True, env=ENV)  # bytecode caches, the vectors file
        full = cold(root, cold_q, "fulltext")
        hybrid = cold(root, cold_q, "hybrid")
        folder = root / "kbindex.db.vectors"
        shutil.rmtree(folder, ignore_errors=True)
        folder.write_text("not a folder")  # the vectors file cannot be written: every query reads the BLOB
        blob = cold(root, cold_q, "hybrid")
        folder.unlink()
        ft50, ft95 = in_process(root, questions[:args.queries], "fulltext")
        hy50, hy95 = in_process(root, questions[:args.queries], "hybrid")
        py = statistics.median(_time([sys.executable, "-c", "pass"]) for _ in range(5))
    print(f"{args.docs} documents, {built['chunks']} chunks × 384 dimensions (fake-embed double); "
          f"sync {built['sync_s']:.1f} s, embed {built['embed_s']:.1f} s; `python -c pass` {py:.0f} ms")
    print("| measure | fulltext (baseline) | hybrid | hybrid, BLOB read | target |")
    print("|---|---|---|---|---|")
    print(f"| cold `query`, median of {len(cold_q)} | {full:.0f} ms | {hybrid:.0f} ms ({hybrid / full:.2f}×) | "
          f"{blob:.0f} ms ({blob / full:.2f}×) | hybrid ≤ 2× fulltext |")
    print(f"| in-process p50 / p95, {args.queries} questions | {ft50:.1f} / {ft95:.1f} ms | "
          f"{hy50:.1f} / {hy95:.1f} ms | – | hybrid p50 ≤ 30 ms at 20k |")


def _chunks(root: Path) -> int:
    import sqlite3

    con = sqlite3.connect(root / "kbindex.db")
    try:
        return con.execute("SELECT count(*) FROM embedding_chunks").fetchone()[0]
    finally:
        con.close()


def _time(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=ENV)
    return (time.perf_counter() - t) * 1000


if __name__ == "__main__":
    main()
