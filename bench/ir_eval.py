#!/usr/bin/env python3
"""Retrieval quality and speed of ``kbindex query`` on Cranfield, side by side with bm25s.

    python3 bench/ir_eval.py                      # ../shared/data/cranfield next to the repo
    python3 bench/ir_eval.py --data DIR --methods fulltext,hybrid,keyword

What it measures (one process, one thread):

1. Each Cranfield document is written as ``<id>.md`` (``# title`` + text) into
   a temporary knowledge base, which is indexed by the real ``sync``.
2. Every query goes through :meth:`KnowledgeBase.query`, the code path of
   ``kbindex query`` (term extraction, method choice, expansion, full text,
   fusion, snippets, and recording the attempt in its own transaction), with
   ``--limit 100``. queries/s counts all of it; the second figure adds the
   stale-index check the CLI runs before each query.
3. bm25s (Snowball stemmer + English stopwords, its defaults k1=1.5, b=0.75)
   indexes the same corpus and answers the same queries in the same run.

nDCG@10 uses graded gains 2^rel - 1 (the collection's README); Recall@100
counts every judged document (all have rel >= 1).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.cranfield import build_kb, doc_id, load, ndcg_at, recall_at  # noqa: E402


def evaluate(runs: dict[str, list[str]], qrels) -> tuple[float, float]:
    n = len(runs)
    return (sum(ndcg_at(r, qrels[q]) for q, r in runs.items()) / n,
            sum(recall_at(r, qrels[q]) for q, r in runs.items()) / n)


def run_kbindex(kb, queries, method: str, limit: int, stale_check: bool, **opts):
    runs: dict[str, list[str]] = {}
    t = time.perf_counter()
    for q in queries:
        if stale_check:
            kb.stale()
        out = kb.query(q["text"], method=method, limit=limit, **opts)
        runs[q["_id"]] = [doc_id(r["filepath"]) for r in out["results"]]
    return runs, len(queries) / (time.perf_counter() - t)


def run_bm25s(corpus, queries, limit: int):
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [d["_id"] for d in corpus]
    texts = [(d.get("title", "") + " " + d.get("text", "")) for d in corpus]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    t = time.perf_counter()
    runs: dict[str, list[str]] = {}
    for q in queries:   # one query at a time, as an agent asks
        toks = bm25s.tokenize([q["text"]], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(toks, k=min(limit, len(ids)), show_progress=False, n_threads=1)
        runs[q["_id"]] = [ids[i] for i in docs[0]]
    return runs, len(queries) / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "cranfield",
                   help="BEIR-format folder (corpus.jsonl, queries.jsonl, qrels.tsv)")
    p.add_argument("--methods", default="fulltext,hybrid", help="comma-separated kbindex methods")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--column-weights", default=None,
                   help="bm25 column weights title,summary,keywords,body (default: kbindex's)")
    p.add_argument("--no-bm25s", action="store_true", help="skip the bm25s baseline")
    p.add_argument("--keep", type=Path, default=None, help="build the KB here (kept) instead of a temp folder")
    args = p.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"no corpus.jsonl in {args.data}", file=sys.stderr)
        return 1
    corpus, queries, qrels = load(args.data)
    opts = {}
    if args.column_weights:
        opts["column_weights"] = tuple(float(x) for x in args.column_weights.split(","))
    with tempfile.TemporaryDirectory(prefix="kbindex-ir-") as tmp:
        root = args.keep or Path(tmp)
        kb, n_docs, sync_secs = build_kb(corpus, root)
        print(f"{args.data.name}: {n_docs} documents indexed by sync in {sync_secs:.2f}s; "
              f"{len(queries)} queries; limit {args.limit}", file=sys.stderr)
        rows = []
        for m in [m.strip() for m in args.methods.split(",") if m.strip()]:
            run_kbindex(kb, queries[:20], m, args.limit, False, record=False, **opts)   # warm caches
            runs, qps = run_kbindex(kb, queries, m, args.limit, False, **opts)
            _, qps_stale = run_kbindex(kb, queries, m, args.limit, True, **opts)
            nd, rc = evaluate(runs, qrels)
            rows.append((f"kbindex {m}", nd, rc, qps, qps_stale))
        t = time.perf_counter()
        info = None
        for _ in range(20):
            info = kb.stale()
        stale_ms = (time.perf_counter() - t) / 20 * 1000
        recorded = kb.conn.execute("SELECT COUNT(*) FROM query_attempts").fetchone()[0]
        kb.close()
    if not args.no_bm25s:
        runs, qps = run_bm25s(corpus, queries, args.limit)
        nd, rc = evaluate(runs, qrels)
        rows.append(("bm25s (baseline)", nd, rc, qps, None))
    print(f"{'system':<20} {'nDCG@10':>8} {'R@100':>7} {'queries/s':>10} {'q/s +stale check':>17}")
    for name, nd, rc, qps, qps2 in rows:
        extra = f"{qps2:>17.0f}" if qps2 is not None else f"{'-':>17}"
        print(f"{name:<20} {nd:>8.4f} {rc:>7.4f} {qps:>10.0f} {extra}")
    print(f"stale check: {stale_ms:.2f} ms per call over {info['files']} files (stale={info['stale']}); "
          f"{recorded} attempts recorded", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
