#!/usr/bin/env python3
"""Automatic indexing on Cranfield (no tags at all): retrieval before and after `kbindex enrich`.

    python3 bench/enrich_eval.py                          # ../shared/data/cranfield next to the repo
    python3 bench/enrich_eval.py --data DIR --llm-backend ollama --llm-docs 100
    PYTHONPATH=/tmp/yake_pkgs python3 bench/enrich_eval.py --yake   # YAKE beside our extractor

One process, one run:

1. Each document is written as ``<id>.md`` and indexed by the real ``sync`` (no keywords files).
2. Before: ``query --method keyword`` (known keywords only: none yet), ``--method hybrid`` and
   ``--method fulltext`` nDCG@10 / Recall@100 over every judged query (not recorded in the history).
3. ``KnowledgeBase.enrich.documents(all_=True, use_llm=False)`` -- the code path of ``kbindex enrich --all
   --no-llm``: read, corpus statistics, extraction, merge, keywords files written, indexed. Its
   throughput (documents/s) counts all of it.
4. After: the same queries again, now with the generated keywords.
5. bm25s (Snowball stemmer, English stopwords) on the same corpus, as in bench/ir_eval.py.

Targets: hybrid after >= hybrid before; keyword-only after >= 60% of bm25s; >= 200 docs/s.
``--yake`` also measures the YAKE library (if importable) as the extractor, written through the same
keywords files; ``--llm-backend`` enriches the first ``--llm-docs`` documents with an LLM (reported, not
gated: a partial enrichment says little about retrieval).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.cranfield import build_kb, doc_id, load  # noqa: E402
from bench.ir_eval import evaluate, run_bm25s  # noqa: E402

DATA_CANDIDATES = (data_dir("cranfield"),)


def measure(kb, queries, qrels, method: str) -> tuple[float, float]:
    runs = {}
    for q in queries:
        out = kb.query(q["text"], options=QueryOptions(method=method, limit=100, record=False))
        runs[q["_id"]] = [doc_id(r["filepath"]) for r in out["results"]]
    return evaluate(runs, qrels)


def with_yake(corpus, root: Path, ngram: int):
    """A KB whose keywords files hold YAKE's top keywords (as many as ours would give)."""
    import yake

    from bench.cranfield import build_kb as build
    from kb_indexer.enrich.keyphrases import keyword_count

    kb, _, _ = build(corpus, root)
    extractor = yake.KeywordExtractor(lan="en", n=ngram, top=25)
    t = time.perf_counter()
    for d in corpus:
        text = f"{d.get('title', '')}. {d.get('text', '')}"
        found = extractor.extract_keywords(text)[:keyword_count(len(text.split()))]
        seen, kws = set(), []
        for kw, _ in found:
            if kw.lower() not in seen:
                seen.add(kw.lower())
                kws.append(kw)
        data = {"filepath": f"{d['_id']}.md", "summary": "", "keywords": kws,
                "generated": {"method": f"yake n={ngram}", "keywords": kws}}
        (root / "knowledge-base" / f"{d['_id']}.keywords.json").write_text(json.dumps(data), encoding="utf-8")
    secs = time.perf_counter() - t
    kb.sync()
    return kb, len(corpus) / secs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=next((d for d in DATA_CANDIDATES if d.is_dir()), DATA_CANDIDATES[0]))
    p.add_argument("--yake", action="store_true", help="also measure the yake library as the extractor")
    p.add_argument("--llm-backend", default=None, help="also enrich --llm-docs documents with this LLM backend")
    p.add_argument("--llm-docs", type=int, default=50)
    args = p.parse_args(argv)
    corpus, queries, qrels = load(args.data)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kbindex-enrich-") as tmp:
        kb, n_docs, _ = build_kb(corpus, Path(tmp) / "stat")
        for m in ("keyword", "hybrid", "fulltext"):
            rows.append((f"{m}, no keywords", *measure(kb, queries, qrels, m)))
        t = time.perf_counter()
        res = kb.enrich.documents(all_=True, use_llm=False)
        secs = time.perf_counter() - t
        assert res["failed"] == 0 and res["enriched"] == n_docs, {k: v for k, v in res.items() if k != "documents"}
        rate = n_docs / secs
        for m in ("keyword", "hybrid", "fulltext"):
            rows.append((f"{m}, generated", *measure(kb, queries, qrels, m)))
        kb.close()
        print(f"enrich --all --no-llm: {n_docs} documents in {secs:.2f}s = {rate:.0f} docs/s", file=sys.stderr)
        if args.yake:
            for ngram in (1, 3):
                ykb, yrate = with_yake(corpus, Path(tmp) / f"yake{ngram}", ngram)
                print(f"yake n={ngram}: {yrate:.0f} docs/s (extraction only)", file=sys.stderr)
                for m in ("keyword", "hybrid"):
                    rows.append((f"{m}, yake n={ngram}", *measure(ykb, queries, qrels, m)))
                ykb.close()
        if args.llm_backend:
            rows += llm_rows(corpus, Path(tmp) / "llm", args, queries, qrels)
    runs, _ = run_bm25s(corpus, queries, 100)
    bm25 = evaluate(runs, qrels)
    rows.append(("bm25s (baseline)", *bm25))
    print(f"{'system':<28} {'nDCG@10':>8} {'R@100':>7}")
    for name, nd, rc in rows:
        print(f"{name:<28} {nd:>8.4f} {rc:>7.4f}")
    got = {name: nd for name, nd, _ in rows}
    checks = [("hybrid with generated >= without", got["hybrid, generated"] >= got["hybrid, no keywords"]),
              ("keyword-only >= 60% of bm25s", got["keyword, generated"] >= 0.6 * bm25[0]),
              (f"enrich >= 200 docs/s ({rate:.0f})", rate >= 200)]
    print(f"keyword-only / bm25s: {got['keyword, generated'] / bm25[0]:.0%}")
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(ok for _, ok in checks) else 1


def llm_rows(corpus, root: Path, args, queries, qrels):
    """Enrich the first ``--llm-docs`` documents with the LLM (the rest statistically): reported only."""
    from kb_indexer.llm.config import LLMOptions

    kb, _, _ = build_kb(corpus, root)
    first = [f"{d['_id']}.md" for d in corpus[:args.llm_docs]]
    t = time.perf_counter()
    res = kb.enrich.documents(first, llm=LLMOptions(backend=args.llm_backend))
    secs = time.perf_counter() - t
    print(f"LLM {args.llm_backend}: {res['methods']} in {secs:.1f}s; {res['llm']}", file=sys.stderr)
    kb.enrich.documents(all_=True, use_llm=False)
    out = [(f"{m}, llm {args.llm_docs} + stat", *measure(kb, queries, qrels, m)) for m in ("keyword", "hybrid")]
    kb.close()
    return out


if __name__ == "__main__":
    raise SystemExit(main())
