"""`kbindex eval` on Cranfield: its figures and its time, beside the same questions asked in a loop.

    python bench/eval_cranfield.py [--data DIR] [--seed 13] [--keep DIR]

1. Cranfield is written as a knowledge base (``bench/cranfield.py``: ``<id>.md``) and indexed by the real sync.
2. Baseline, same run: the 225 questions through ``KnowledgeBase.query`` (``--limit 100``, nothing recorded) in
   one process, scored with ``bench/cranfield.py``'s nDCG@10 and Recall@100, timed.
3. ``kbindex eval --queries DIR --compare no-learned --format json`` as a process (wall time, start-up included):
   its means must equal the baseline's (before any feedback both configurations are the same).
4. Feedback on a random half of the questions (helpful: relevant documents in the top 20; not helpful:
   non-relevant ones in the top 10, as ``bench/feedback_eval.py``), then ``learn``.
5. ``kbindex eval`` again on all 225, on each half (a queries file of its questions) and with
   ``--qrels feedback``, each ``--compare no-learned``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.cranfield import DEFAULT_DATA, build_kb, doc_id, load, ndcg_at, recall_at  # noqa: E402


def kbindex_eval(root: Path, *args: str) -> tuple[dict, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(REPO / "kbindex.py"), "eval", *args, "--compare", "no-learned",
                           "--db", str(root / "kbindex.db"), "--format", "json"], capture_output=True, text=True,
                          env=env, cwd=root)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout), wall


def show(label: str, out: dict, wall: float) -> None:
    b, c = out["base"], out["compare"]
    print(f"{label}: {out['judgements']['questions']} questions, {wall:.1f} s wall "
          f"(queries {b['seconds']:.1f} + {c['seconds']:.1f} s)")
    print(f"  as it is    nDCG@10 {b['ndcg_at_10']:.4f}  R@100 {b['recall_at_100']:.4f}")
    print(f"  no-learned  nDCG@10 {c['ndcg_at_10']:.4f}  R@100 {c['recall_at_100']:.4f}")
    print(f"  difference  {out['delta_ndcg_at_10']:+.4f}  {out['delta_recall_at_100']:+.4f}; wins {out['wins']}, "
          f"losses {out['losses']}, ties {out['ties']}, sign test p {out['p_value']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--keep", type=Path, help="build the knowledge base here (and keep it)")
    args = ap.parse_args()
    corpus, queries, qrels = load(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "kb"
        kb, added, secs = build_kb(corpus, root)
        print(f"Cranfield: {len(corpus)} documents ({added} synced in {secs:.1f} s), {len(queries)} judged questions")
        opts = QueryOptions(limit=100, record=False)
        kb.query(queries[0]["text"], options=opts)   # warm, as eval's untimed first query
        start = time.perf_counter()
        runs = {q["_id"]: [doc_id(r["filepath"]) for r in kb.query(q["text"], options=opts)["results"]] for q in queries}
        loop = time.perf_counter() - start
        base_ndcg = sum(ndcg_at(runs[q], qrels[q]) for q in runs) / len(runs)
        base_recall = sum(recall_at(runs[q], qrels[q]) for q in runs) / len(runs)
        print(f"baseline loop of KnowledgeBase.query: {loop:.1f} s for {len(runs)} questions; nDCG@10 {base_ndcg:.4f}, "
              f"R@100 {base_recall:.4f}")
        out, wall = kbindex_eval(root, "--queries", str(args.data))
        show("eval before feedback", out, wall)
        print(f"  equals the baseline: {abs(out['base']['ndcg_at_10'] - base_ndcg) < 1e-4 and abs(out['base']['recall_at_100'] - base_recall) < 1e-4}")

        order = queries[:]
        random.Random(args.seed).shuffle(order)
        train, test = order[:len(order) // 2], order[len(order) // 2:]
        marks = 0
        for q in train:
            res = kb.query(q["text"], options=QueryOptions(limit=20))
            rels = qrels[q["_id"]]
            helpful = [r["filepath"] for r in res["results"] if rels.get(doc_id(r["filepath"]), 0) > 0]
            bad = [r["filepath"] for r in res["results"][:10] if rels.get(doc_id(r["filepath"]), 0) <= 0]
            if helpful or bad:
                kb.learning.feedback(res["query_id"], helpful, bad, attempt_id=res["attempt_id"])
                marks += len(helpful) + len(bad)
        learned = kb.learning.learn()["summary"]
        kb.close()
        print(f"feedback on {len(train)} questions ({marks} marks), learn: {learned}")
        halves = {}
        for name, qs in (("asked", train), ("unseen", test)):
            halves[name] = root / f"{name}.jsonl"
            halves[name].write_text("".join(json.dumps({"_id": q["_id"], "text": q["text"]}) + "\n" for q in qs))
        qrels_file = str(args.data / "qrels.tsv")
        for label, extra in (("eval all 225 after learn", ["--queries", str(args.data)]),
                             ("eval the half asked again", ["--queries", str(halves["asked"]), "--qrels", qrels_file]),
                             ("eval the unseen half", ["--queries", str(halves["unseen"]), "--qrels", qrels_file]),
                             ("eval --qrels feedback", ["--qrels", "feedback"])):
            show(label, *kbindex_eval(root, *extra))


if __name__ == "__main__":
    main()
