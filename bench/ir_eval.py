#!/usr/bin/env python3
"""Retrieval quality and speed of ``kbindex query`` on Cranfield, side by side with bm25s.

    python3 bench/ir_eval.py                      # ../shared/data/cranfield next to the repo
    python3 bench/ir_eval.py --data DIR --methods fulltext,hybrid,keyword
    python3 bench/ir_eval.py --data DIR --embed local --methods fulltext,semantic,hybrid
    python3 bench/ir_eval.py --embed local --keep /tmp/hyb-cranfield --methods hybrid --vector-feedback 0,default

What it measures (one process, one thread):

1. Each Cranfield document is written as ``<id>.md`` (``# title`` + text) into
   a temporary knowledge base, which is indexed by the real ``sync``.
2. Every query goes through :meth:`KnowledgeBase.query`, the code path of
   ``kbindex query`` (term extraction, method choice, expansion, full text,
   fusion, snippets, and recording the attempt in its own transaction), with
   ``--limit 100``. queries/s counts all of it; the second figure adds the
   stale-index check the CLI runs before each query. ``auto`` is the method
   ``kbindex query`` picks by itself (its row says "default"); ``fulltext`` and
   ``hybrid`` force one.
3. bm25s (Snowball stemmer + English stopwords, its defaults k1=1.5, b=0.75)
   indexes the same corpus and answers the same queries in the same run.

4. With ``--embed BACKEND`` (e.g. ``local``: all-MiniLM-L6-v2, ``kbindex[local]``),
   the KB is embedded by the real ``kbindex embed`` first (its time and chunks/s are
   printed), so the ``semantic`` and ``hybrid`` methods use vectors; beside them, a
   plain RRF(k=60) of bm25s and the same vectors (each document's best chunk, read
   from the index) is scored. kbindex's queries/s for these methods are measured
   with the question's vector in the LLM cache (the warm-up run fills it; the
   embedding model's own time per question is printed apart). ``--keep DIR`` reuses a KB built and
   embedded by an earlier run (nothing is embedded again); ``--vector-feedback 0,default`` scores hybrid
   without vector feedback (plain fusion) beside kbindex's default in the same run.

nDCG@10 uses graded gains 2^rel - 1 (the collection's README); Recall@100
counts every judged document (all have rel >= 1).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.cranfield import build_kb, doc_id, load, ndcg_at, recall_at  # noqa: E402


def evaluate(runs: dict[str, list[str]], qrels) -> tuple[float, float]:
    n = len(runs)
    return (sum(ndcg_at(r, qrels[q]) for q, r in runs.items()) / n,
            sum(recall_at(r, qrels[q]) for q, r in runs.items()) / n)


def run_kbindex(kb, queries, options: QueryOptions, stale_check: bool, embed=None):
    runs: dict[str, list[str]] = {}
    t = time.perf_counter()
    for q in queries:
        if stale_check:
            kb.stale()
        out = kb.query(q["text"], options=options, embed=embed)
        runs[q["_id"]] = [doc_id(r["filepath"]) for r in out["results"]]
    return runs, len(queries) / (time.perf_counter() - t)


def dense_runs(kb, queries, limit: int, embed_opts) -> tuple[dict[str, list[str]], float]:
    """Best-chunk cosine ranking straight from the index's vectors (what RRF fuses), and the seconds the
    embedding model takes per question."""
    from kb_indexer.llm.config import resolve_embed
    from kb_indexer.embed.query import dense_source
    from kb_indexer.llm.embedding import EmbedClient
    from kb_indexer.search.semantic import run as run_dense

    source = dense_source(kb.conn, embed_opts)
    paths = {r[0]: doc_id(r[1]) for r in kb.conn.execute("SELECT id, filepath FROM documents")}
    client = EmbedClient(resolve_embed(embed_opts, (source.backend, source.model_name)))
    timed = queries[:10]   # the model's own time per question (the vectors: the query path's, cached)
    t = time.perf_counter()
    try:
        for q in timed:
            client.embed_one(q["text"])
        per_question = (time.perf_counter() - t) / len(timed)
    except Exception as exc:   # a busy machine: the model did not load in time (the figure is left out)
        print(f"embedding time per question not measured: {exc}", file=sys.stderr)
        per_question = float("nan")
    client.close()
    assert source.embed is not None
    vectors = [source.embed(q["text"]) for q in queries]
    runs = {}
    for q, v in zip(queries, vectors):
        source.embed = lambda _text, v=v: v
        top = run_dense(kb.conn, source, q["text"], limit).top
        runs[q["_id"]] = [paths[d] for d in sorted(top, key=lambda d: -top[d])]
    return runs, per_question


def rrf(*runs: dict[str, list[str]], k: int = 60, limit: int = 100) -> dict[str, list[str]]:
    out = {}
    for qid in runs[0]:
        score: dict[str, float] = {}
        for run in runs:
            for rank, d in enumerate(run.get(qid, [])[:limit]):
                score[d] = score.get(d, 0.0) + 1.0 / (k + rank + 1)
        out[qid] = sorted(score, key=lambda d: (-score[d], d))[:limit]
    return out


@contextlib.contextmanager
def neighbour_settings(variant: str) -> Iterator[None]:
    """kb_indexer.search.neighbours as ``variant`` says while the block runs (see --neighbours): 'default'
    (kbindex's), 'off' (the ranking before score regularisation), 'withvectors' (also when
    vectors rank), or DOCS:NEIGHBOURS:WEIGHT."""
    from kb_indexer.search import neighbours

    names = ("NB_DOCS", "NB_NEIGHBOURS", "NB_WEIGHT", "NB_WITH_VECTORS", "NB_MIN_DOCS")
    saved = {n: getattr(neighbours, n) for n in names}
    if variant == "off":
        neighbours.NB_MIN_DOCS = 1 << 62
    elif variant == "withvectors":
        neighbours.NB_WITH_VECTORS = True
    elif variant != "default":
        docs, near, weight = variant.split(":")
        neighbours.NB_DOCS, neighbours.NB_NEIGHBOURS, neighbours.NB_WEIGHT = int(docs), int(near), float(weight)
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(neighbours, n, v)


@contextlib.contextmanager
def vector_feedback(docs: str) -> Iterator[None]:
    """kb_indexer.search.semantic.VECTOR_FB_DOCS set to ``docs`` ('default': kbindex's; 0: off, plain
    fusion) while the block runs (see --vector-feedback)."""
    from kb_indexer.search import semantic

    saved = semantic.VECTOR_FB_DOCS
    if docs != "default":
        semantic.VECTOR_FB_DOCS = int(docs)
    try:
        yield
    finally:
        semantic.VECTOR_FB_DOCS = saved


@contextlib.contextmanager
def prf_settings(variant: str) -> Iterator[None]:
    """Pseudo-relevance feedback as ``variant`` says (see --prf) while the block runs: the same code path
    as ``kbindex query``, with kb_indexer.search.feedback's constants set."""
    from kb_indexer.search import feedback

    names = ("FB_DOCS", "FB_TERMS", "FB_WEIGHT", "FB_MIN_DOCS", "FB_FUSED_DOCS", "FB_WITH_VECTORS")
    saved = {n: getattr(feedback, n) for n in names}
    if variant in ("off", "on"):
        pass
    elif variant == "withvectors":
        feedback.FB_WITH_VECTORS = True
    elif variant == "fuseddocs":
        feedback.FB_WITH_VECTORS = feedback.FB_FUSED_DOCS = True
    elif variant != "default":   # (default: kbindex's default, which is off)
        docs, terms, repeat = (int(x) for x in variant.split(":"))
        feedback.FB_WITH_VECTORS = True
        feedback.FB_DOCS, feedback.FB_TERMS, feedback.FB_WEIGHT = docs, terms, 1 / repeat
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(feedback, n, v)


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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=data_dir("cranfield"),
                   help="BEIR-format folder (corpus.jsonl, queries.jsonl, qrels.tsv)")
    p.add_argument("--methods", default="auto,fulltext,hybrid",
                   help="comma-separated kbindex methods (auto: what `kbindex query` runs by default)")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--column-weights", default=None,
                   help="bm25 column weights title,summary,keywords,body (default: kbindex's)")
    p.add_argument("--prf", default="default",
                   help="comma-separated pseudo-relevance feedback variants, a row each: 'default' (kbindex's "
                        "default: off), 'on' (query --prf with kbindex's settings), 'off', 'withvectors', "
                        "'fuseddocs', or DOCS:TERMS:REPEAT (with --prf) "
                        "(kb_indexer.search.feedback FB_DOCS, FB_TERMS, and FB_WEIGHT = 1/REPEAT)")
    p.add_argument("--vector-feedback", default="default",
                   help="comma-separated hybrid vector-feedback variants, a row each: 'default' (kbindex's) or "
                        "a number of documents (0: off, as before vector feedback)")
    p.add_argument("--neighbours", default="default",
                   help="comma-separated score-regularisation variants, a row each: 'default' (kbindex's), 'off' "
                        "(the ranking before it), 'withvectors', or DOCS:NEIGHBOURS:WEIGHT")
    p.add_argument("--no-bm25s", action="store_true", help="skip the bm25s baseline")
    p.add_argument("--keep", type=Path, default=None, help="build the KB here (kept) instead of a temp folder")
    p.add_argument("--embed", default=None, metavar="BACKEND",
                   help="embed the KB with this backend (e.g. local) so semantic and hybrid use vectors")
    p.add_argument("--embed-model", default=None)
    return p


def _embed(kb, queries, args):
    """Embed the KB as ``--embed`` says: (the vectors' own runs, the embedding options)."""
    from kb_indexer.llm.config import EmbedOptions

    embed_opts = EmbedOptions(backend=args.embed, model=args.embed_model)
    res = kb.embeddings.embed(embed=embed_opts)
    print(f"embed ({res['backend']} {res['model']}, {res['dim']} dims): {res['chunks']} chunks of "
          f"{res['embedded']} documents in {res['seconds']:.1f}s ({res['chunks'] / res['seconds']:.1f} "
          f"chunks/s, {res['requests']} requests)", file=sys.stderr)
    dense, per_q = dense_runs(kb, queries, args.limit, embed_opts)
    print(f"embedding one question: {per_q * 1000:.1f} ms", file=sys.stderr)
    return dense, embed_opts


def _kbindex_rows(kb, queries, qrels, args, column_weights, embed_opts) -> list[tuple]:
    """A row per method and variant: (name, nDCG@10, R@100, queries/s, queries/s with the stale check)."""
    rows = []
    variants = [(v.strip(), fb.strip(), nb.strip()) for v in args.prf.split(",") if v.strip()
                for fb in args.vector_feedback.split(",") if fb.strip()
                for nb in args.neighbours.split(",") if nb.strip()]
    for m in [m.strip() for m in args.methods.split(",") if m.strip()]:
        for variant, fb, nb in variants:
            with prf_settings(variant), vector_feedback(fb), neighbour_settings(nb):
                warm = queries if embed_opts is not None and m in ("semantic", "hybrid", "auto") else queries[:20]
                options = QueryOptions(method=m, limit=args.limit, column_weights=column_weights,
                                       prf=variant not in ("default", "off"))
                # warm caches (question vectors)
                run_kbindex(kb, warm, options.replace(record=False), False, embed_opts)
                runs, qps = run_kbindex(kb, queries, options, False, embed_opts)
                _, qps_stale = run_kbindex(kb, queries, options, True, embed_opts)
            nd, rc = evaluate(runs, qrels)
            name = f"kbindex {m}" + (" (default)" if m == "auto" else "") + \
                ("" if variant == "default" else f" prf={variant}") + \
                ("" if fb == "default" else f" vfb={fb}") + ("" if nb == "default" else f" nb={nb}")
            rows.append((name, nd, rc, qps, qps_stale))
    return rows


def _print_table(rows: list[tuple]) -> None:
    base = next((nd for name, nd, *_ in rows if name == "bm25s (baseline)"), None)
    width = max([20] + [len(r[0]) for r in rows])
    print(f"{'system':<{width}} {'nDCG@10':>8} {'× bm25s':>8} {'R@100':>7} {'queries/s':>10} {'q/s +stale check':>17}")
    for name, nd, rc, qps, qps2 in rows:
        extra = f"{qps2:>17.0f}" if qps2 is not None else f"{'-':>17}"
        shown = f"{qps:>10.0f}" if qps is not None else f"{'-':>10}"
        ratio = f"{nd / base:>8.3f}" if base else f"{'-':>8}"
        print(f"{name:<{width}} {nd:>8.4f} {ratio} {rc:>7.4f} {shown} {extra}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not (args.data / "corpus.jsonl").is_file():
        print(f"no corpus.jsonl in {args.data}", file=sys.stderr)
        return 1
    corpus, queries, qrels = load(args.data)
    column_weights = tuple(float(x) for x in args.column_weights.split(",")) if args.column_weights else None
    with tempfile.TemporaryDirectory(prefix="kbindex-ir-") as tmp:
        kb, n_docs, sync_secs = build_kb(corpus, args.keep or Path(tmp))
        print(f"{args.data.name}: {n_docs} documents indexed by sync in {sync_secs:.2f}s; "
              f"{len(queries)} queries; limit {args.limit}", file=sys.stderr)
        dense, embed_opts = _embed(kb, queries, args) if args.embed else (None, None)
        rows = _kbindex_rows(kb, queries, qrels, args, column_weights, embed_opts)
        t = time.perf_counter()
        info = None
        for _ in range(20):
            info = kb.stale()
        stale_ms = (time.perf_counter() - t) / 20 * 1000
        recorded = kb.conn.execute("SELECT COUNT(*) FROM query_attempts").fetchone()[0]
        kb.close()
    if not args.no_bm25s:
        runs, qps = run_bm25s(corpus, queries, args.limit)
        rows.append(("bm25s (baseline)", *evaluate(runs, qrels), qps, None))
        if dense is not None:
            rows.append(("vectors alone", *evaluate(dense, qrels), None, None))
            rows.append(("RRF60 bm25s+vectors", *evaluate(rrf(runs, dense, limit=args.limit), qrels), None, None))
    _print_table(rows)
    print(f"stale check: {stale_ms:.2f} ms per call over {info['files']} files (stale={info['stale']}); "
          f"{recorded} attempts recorded", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
