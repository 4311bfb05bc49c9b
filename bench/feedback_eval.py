"""Does learning from feedback improve retrieval?  Measured on Cranfield, one command:

    python bench/feedback_eval.py [--seed 13] [--method auto]

Queries are split 50/50 with a fixed seed. For the train half every query goes through the
same API as `kbindex query`; feedback comes from the qrels (helpful = relevant documents in the
top 20, not-helpful = non-relevant documents in the top 10) through the same API as
`kbindex feedback`, then `learn` runs. nDCG@10 is printed before and after learning for
(a) the train half asked again and (b) the unseen test half, and after a `learn --dry-run`
(which must equal "before").
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.cranfield import DEFAULT_DATA, build_kb, doc_id, load, ndcg_at  # noqa: E402


def evaluate(kb, queries, qrels, method: str) -> float:
    scores = []
    for q in queries:
        res = kb.query(q["text"], options=QueryOptions(method=method, limit=10))
        ranked = [doc_id(r["filepath"]) for r in res["results"]]
        scores.append(ndcg_at(ranked, qrels.get(q["_id"], {})))
    return statistics.mean(scores)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--method", default="auto")
    args = ap.parse_args()

    corpus, queries, qrels = load(args.data)
    rng = random.Random(args.seed)
    order = queries[:]
    rng.shuffle(order)
    half = len(order) // 2
    train, test = order[:half], order[half:]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        kb, _, _ = build_kb(corpus, root)
        before_train = evaluate(kb, train, qrels, args.method)
        before_test = evaluate(kb, test, qrels, args.method)

        t = time.perf_counter()
        n_help = n_not = 0
        for q in train:
            res = kb.query(q["text"], options=QueryOptions(method=args.method, limit=20))
            rels = qrels[q["_id"]]
            helpful = [r["filepath"] for r in res["results"][:20] if rels.get(doc_id(r["filepath"]), 0) > 0]
            not_helpful = [r["filepath"] for r in res["results"][:10] if rels.get(doc_id(r["filepath"]), 0) <= 0]
            if helpful or not_helpful:
                kb.learning.feedback(res["query_id"], helpful, not_helpful, attempt_id=res["attempt_id"])
                n_help += len(helpful)
                n_not += len(not_helpful)
        feedback_s = time.perf_counter() - t

        dry = kb.learning.learn(dry_run=True)
        dry_train = evaluate(kb, train, qrels, args.method)
        dry_test = evaluate(kb, test, qrels, args.method)

        t = time.perf_counter()
        learned = kb.learning.learn()
        learn_s = time.perf_counter() - t
        after_train = evaluate(kb, train, qrels, args.method)
        after_test = evaluate(kb, test, qrels, args.method)
        again = kb.learning.learn()
        kb.close()

    summ = learned["summary"]
    print(f"Cranfield feedback benchmark: {len(train)} train / {len(test)} test queries (seed {args.seed}), "
          f"method {args.method}")
    print(f"feedback recorded: {n_help} helpful, {n_not} not helpful marks ({feedback_s:.1f}s)")
    print(f"learn: {summ['total']} items in {learn_s:.2f}s -- {summ['associations']} associations, "
          f"{summ['keywords']} keywords, {summ['similarities']} similarities, "
          f"{summ['score_adjustments']} similarity-score adjustments; second run: {again['summary']['total']} items")
    print()
    print(f"{'nDCG@10':28s} {'before':>8s} {'dry-run':>8s} {'after':>8s} {'change':>8s}  target")
    print(f"{'(a) train, asked again':28s} {before_train:8.4f} {dry_train:8.4f} {after_train:8.4f} "
          f"{after_train - before_train:+8.4f}  >= +0.10")
    print(f"{'(b) unseen test half':28s} {before_test:8.4f} {dry_test:8.4f} {after_test:8.4f} "
          f"{after_test - before_test:+8.4f}  drop <= 0.005")
    print(f"dry-run suggestions: {dry['summary']['total']}; dry-run equals before: "
          f"{abs(dry_train - before_train) < 1e-12 and abs(dry_test - before_test) < 1e-12}")


if __name__ == "__main__":
    main()
