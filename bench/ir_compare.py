#!/usr/bin/env python3
"""Where ``kbindex query`` and bm25s disagree, question by question (the diagnosis behind bench/ir_eval.py).

    python3 bench/ir_compare.py                       # Cranfield (../shared/data/cranfield)
    python3 bench/ir_compare.py --data DIR --show 10  # any BEIR-format collection, 10 largest losses

For every question it scores nDCG@10 of kbindex (the real ``KnowledgeBase.query``, ``--method fulltext`` by
default) and of bm25s (the baseline of bench/ir_eval.py: Snowball stemmer, its 33 English stopwords,
k1 1.5, b 0.75), prints how many questions each wins and by how much in total, then the questions kbindex
loses most on, each with the terms only one side searched: kbindex's full-text terms through the index's own
tokenizer (FTS5 ``porter unicode61``; a multi-word term is a phrase, shown in quotes) against bm25s's tokens.
The stems differ by design (porter vs Snowball: ``use`` is ``us`` in one, ``use`` in the other), so read the
lists for words one side lost, not for spellings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.cranfield import build_kb, doc_id, load, ndcg_at  # noqa: E402


def kbindex_runs(kb, queries, method: str, limit: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Ranked document ids and the full-text terms (as the index tokenises them) of each question."""
    from kb_indexer.store.fts_tokens import Tokenizer

    tok = Tokenizer(kb.conn)
    runs, terms = {}, {}
    for q in queries:
        out = kb.query(q["text"], options=QueryOptions(method=method, limit=limit, explain=True, record=False))
        runs[q["_id"]] = [doc_id(r["filepath"]) for r in out["results"]]
        fts = out["query"]["explain"]["fulltext_terms"]
        terms[q["_id"]] = [t[0] if len(t) == 1 else '"' + " ".join(t) + '"' for t in tok.tokens(fts) if t]
    return runs, terms


def bm25s_runs(corpus, queries, limit: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [d["_id"] for d in corpus]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([d.get("title", "") + " " + d.get("text", "") for d in corpus],
                                   stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    runs, terms = {}, {}
    for q in queries:
        toks = bm25s.tokenize([q["text"]], stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retriever.retrieve(toks, k=min(limit, len(ids)), show_progress=False, n_threads=1)
        runs[q["_id"]] = [ids[i] for i in docs[0]]
        terms[q["_id"]] = bm25s.tokenize([q["text"]], stopwords="en", stemmer=stemmer, show_progress=False,
                                         return_ids=False)[0]
    return runs, terms


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=data_dir("cranfield"))
    p.add_argument("--method", default="fulltext")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--show", type=int, default=8, help="questions with the largest losses to list")
    p.add_argument("--keep", type=Path, default=None, help="build the KB here (kept) instead of a temp folder")
    args = p.parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"no corpus.jsonl in {args.data}", file=sys.stderr)
        return 1
    corpus, queries, qrels = load(args.data)
    with tempfile.TemporaryDirectory(prefix="kbindex-cmp-") as tmp:
        kb, _, _ = build_kb(corpus, args.keep or Path(tmp))
        ours, our_terms = kbindex_runs(kb, queries, args.method, args.limit)
        kb.close()
    theirs, their_terms = bm25s_runs(corpus, queries, args.limit)
    a = {q: ndcg_at(r, qrels[q]) for q, r in ours.items()}
    b = {q: ndcg_at(r, qrels[q]) for q, r in theirs.items()}
    diff = {q: a[q] - b[q] for q in a}
    n = len(a)
    print(f"{args.data.name}: {n} questions; nDCG@10 kbindex {sum(a.values()) / n:.4f}, "
          f"bm25s {sum(b.values()) / n:.4f}")
    print(f"kbindex better on {sum(d > 1e-9 for d in diff.values())} (+{sum(max(d, 0) for d in diff.values()):.3f}),"
          f" worse on {sum(d < -1e-9 for d in diff.values())} ({sum(min(d, 0) for d in diff.values()):.3f}), "
          f"equal on {sum(abs(d) <= 1e-9 for d in diff.values())}")
    text = {q["_id"]: q["text"] for q in queries}
    for q in sorted(diff, key=lambda q: (diff[q], q))[:args.show]:
        mine, other = set(our_terms[q]), set(their_terms[q])
        print(f"\n{q}: kbindex {a[q]:.3f}, bm25s {b[q]:.3f}: {' '.join(text[q].split())[:160]}")
        print(f"   only kbindex: {' '.join(sorted(mine - other)) or '-'}")
        print(f"   only bm25s:   {' '.join(sorted(other - mine)) or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
