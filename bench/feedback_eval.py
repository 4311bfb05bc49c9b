"""Does learning from feedback improve retrieval, for the questions asked again and for new ones?
One command (Cranfield by default; ``--data`` another collection in the same BEIR layout):

    python bench/feedback_eval.py [--seeds 1,2,3,4,5] [--method auto] [--data DIR]

For each seed the queries are split 50/50 at random. For the train half every query goes through the
same API as `kbindex query`; feedback comes from the qrels (helpful = relevant documents in the top 20,
not-helpful = non-relevant documents in the top 10) through the same API as `kbindex feedback`, then
`learn` runs. nDCG@10 is printed for (a) the train half asked again and (b) the unseen test half:
before learning, after a `learn --dry-run` (which must equal "before"), after learning with
associations firing for the same question only (``NEIGHBOUR_MIN`` set out of reach: learning as it
was before similar questions shared it), and after learning as shipped (similar questions too).
All four come from the same index in the same run; the last lines give mean, min and max over seeds.
``--base DIR`` starts every split from a copy of a KB built before, e.g. one that `bench/ir_eval.py --embed local
--keep DIR` embedded (then ``--method auto`` runs hybrid, as `kbindex query` would there); each split line names
the methods the queries ran.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)
from kb_indexer.learn import boosts  # noqa: E402

from bench.cranfield import DEFAULT_DATA, build_kb, doc_id, load, ndcg_at  # noqa: E402

COLUMNS = ("before", "dry-run", "same-only", "after")
METHODS: set[str] = set()   # the methods the measured queries ran


def evaluate(kb, queries, qrels, method: str) -> float:
    scores = []
    for q in queries:
        res = kb.query(q["text"], options=QueryOptions(method=method, limit=10, record=False))
        METHODS.add(res["query"]["method"])
        ranked = [doc_id(r["filepath"]) for r in res["results"]]
        scores.append(ndcg_at(ranked, qrels.get(q["_id"], {})))
    return statistics.mean(scores)


def give_feedback(kb, train, qrels, method: str) -> tuple[int, int]:
    n_help = n_not = 0
    for q in train:
        res = kb.query(q["text"], options=QueryOptions(method=method, limit=20))
        rels = qrels[q["_id"]]
        helpful = [r["filepath"] for r in res["results"][:20] if rels.get(doc_id(r["filepath"]), 0) > 0]
        not_helpful = [r["filepath"] for r in res["results"][:10] if rels.get(doc_id(r["filepath"]), 0) <= 0]
        if helpful or not_helpful:
            kb.learning.feedback(res["query_id"], helpful, not_helpful, attempt_id=res["attempt_id"])
            n_help += len(helpful)
            n_not += len(not_helpful)
    return n_help, n_not


def run_split(corpus, queries, qrels, seed: int, method: str, base: Path | None = None) -> dict[str, Any]:
    rng = random.Random(seed)
    order = queries[:]
    rng.shuffle(order)
    half = len(order) // 2
    halves = {"train": order[:half], "test": order[half:]}
    out: dict[str, Any] = {"seed": seed, "n_train": half, "n_test": len(order) - half}

    def measure(column: str) -> None:
        for name, qs in halves.items():
            out[(name, column)] = evaluate(kb, qs, qrels, method)

    with tempfile.TemporaryDirectory() as tmp:
        if base is not None:   # a copy of a KB built (and embedded) before: each split starts from the same index
            shutil.copytree(base, Path(tmp) / "kb")
        kb, _, _ = build_kb(corpus, Path(tmp) / "kb")
        measure("before")
        t = time.perf_counter()
        out["helpful"], out["not_helpful"] = give_feedback(kb, halves["train"], qrels, method)
        out["feedback_s"] = time.perf_counter() - t
        out["dry"] = kb.learning.learn(dry_run=True)["summary"]["total"]
        measure("dry-run")
        t = time.perf_counter()
        out["learned"] = kb.learning.learn()["summary"]
        out["learn_s"] = time.perf_counter() - t
        shipped = boosts.NEIGHBOUR_MIN
        boosts.NEIGHBOUR_MIN = float("inf")   # associations fire for the same question only
        try:
            measure("same-only")
        finally:
            boosts.NEIGHBOUR_MIN = shipped
        measure("after")
        out["again"] = kb.learning.learn()["summary"]["total"]
        kb.close()
    return out


def print_split(r: dict[str, Any]) -> None:
    s = r["learned"]
    print(f"seed {r['seed']}: {r['n_train']} train / {r['n_test']} test queries; feedback {r['helpful']} helpful, "
          f"{r['not_helpful']} not helpful ({r['feedback_s']:.1f}s); learn: {s['total']} items in "
          f"{r['learn_s']:.2f}s ({s['associations']} associations, {s['keywords']} keywords, "
          f"{s['similarities']} similarities, {s['score_adjustments']} score adjustments); "
          f"second learn: {r['again']} items; dry-run suggested {r['dry']}; methods run: {', '.join(sorted(METHODS))}")
    print(f"  {'nDCG@10':24s}" + "".join(f"{c:>10s}" for c in COLUMNS) + f"{'change':>10s}{'same-only':>10s}")
    for name, label in (("train", "(a) train, asked again"), ("test", "(b) unseen test half")):
        vals = [r[(name, c)] for c in COLUMNS]
        print(f"  {label:24s}" + "".join(f"{v:10.4f}" for v in vals)
              + f"{vals[3] - vals[0]:+10.4f}{vals[2] - vals[0]:+10.4f}")
    same = all(abs(r[(n, "dry-run")] - r[(n, "before")]) < 1e-12 for n in ("train", "test"))
    print(f"  dry-run equals before: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--seeds", default="13", help="comma-separated seeds of the random 50/50 splits")
    ap.add_argument("--method", default="auto")
    ap.add_argument("--base", type=Path, default=None,
                    help="start every split from a copy of this folder's KB (e.g. one `bench/ir_eval.py --embed local "
                         "--keep DIR` built and embedded), instead of building a new one")
    args = ap.parse_args()

    corpus, queries, qrels = load(args.data)
    print(f"feedback benchmark on {args.data} ({len(corpus)} documents, {len(queries)} judged queries), "
          f"method {args.method}; 'change' = after - before, 'same-only' = same-question learning - before")
    runs = []
    for seed in [int(s) for s in args.seeds.split(",") if s.strip()]:
        runs.append(run_split(corpus, queries, qrels, seed, args.method, args.base))
        print_split(runs[-1])
    print()
    print(f"over {len(runs)} splits (seeds {args.seeds}): mean [min, max] of the nDCG@10 change")
    for name, label, target in (("train", "(a) train, asked again", ">= +0.10"),
                                ("test", "(b) unseen test half", ">= +0.02")):
        for col in ("same-only", "after"):
            d = [r[(name, col)] - r[(name, "before")] for r in runs]
            print(f"  {label:24s} {col:10s} {statistics.mean(d):+.4f} [{min(d):+.4f}, {max(d):+.4f}]"
                  + (f"  target {target}" if col == "after" else ""))


if __name__ == "__main__":
    main()
