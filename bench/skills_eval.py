"""Skill matching on 862 real public skills: kbindex's keyword matcher beside two baselines.

    python3 bench/skills_eval.py                  # ../shared/data/skills next to the repo (or a worktree)
    python3 bench/skills_eval.py --grid           # also the tuning grid of the three parameters
    python3 bench/skills_eval.py --cold 7         # cold CLI runs to time (0: skip)
    python3 bench/skills_eval.py --llm            # also the LLM matcher with the configured backend
                                                  # (--llm-backend/--llm-model or KBINDEX_LLM_*; --llm-limit N)

What it measures (one process):

1. Every catalog entry becomes ``<tmp>/skills/<name>/SKILL.md`` (front matter name + description, written
   with a YAML emitter; no body: the catalog has none), indexed by the real ``skills sync``.
2. Every query of ``queries_dev.jsonl`` goes through ``KnowledgeBase.skills.match`` (``use_llm=False``),
   the code path of ``kbindex skills match --no-llm``. Latency is per call, in-process, twice: "warm" with
   the matcher's in-memory index kept between calls (a long-lived process using the Python API), and
   "fresh" with that index dropped before every call, which is what one ``kbindex skills match`` process
   pays on top of its start-up (it builds the index from the stored terms once).
3. Baselines in the same run: the aiq-style scorer (lowercase substring: +30 per query word found in the
   name, +10 per word found in the description, top 3, no threshold) and bm25s (name + description, Snowball
   stemmer, English stopwords) returning its top 3 above a score threshold, the threshold picked on these
   same queries (best F1 over a grid: a generous baseline).
4. ``--llm``: the same queries through the LLM matcher (``use_llm=True``, cache off so every query is a
   real call) with the configured backend: P/R/F1, negatives, p50 latency, mean prompt token estimate,
   and how many queries fell back to the keyword result. Reported, not gated; skipped when no backend is
   configured or the first call cannot reach it.
5. The same matchers on this repository's own labelled messages: for tuning, beside the dev queries, 40
   task-like messages needing no skill (``bench/data/skills_tune_negatives.jsonl``), 81 with positives
   (``bench/data/skills_tune.jsonl``) and 40 naming people, places and products (``bench/data/skills_tune_names.jsonl``:
   24 needing no skill, 16 needing one; written before the matcher was run on them); and two held-out sets written before any tuning on them and never
   used for it: 140 (``bench/data/skills_heldout.jsonl``) and 124 (``bench/data/skills_heldout2.jsonl``); and a
   third, 150 (``bench/data/skills_heldout3.jsonl``), written blind by a separate agent that read only the catalog
   (not the matcher, not the other sets) and measured once before any change made for it (docs/benchmarks.md).
   bm25s keeps the threshold picked on the dev queries. ``--grid`` tunes on the tuning sets only;
   ``--no-heldout`` leaves the held-out sets out (for tuning runs). ``--code DIR`` evaluates the
   ``kb_indexer`` of another checkout (e.g. the commit before a change) on the same sets.
6. Cold start: median wall time of ``python -m kb_indexer skills match MESSAGE --no-llm`` against
   ``python -c pass``, and the peak RSS of the match process.
7. The semantic channel (``--no-vectors`` leaves it out): ``skills embed`` (the local all-MiniLM-L6-v2,
   numpy encoder), then every set again with the vectors, beside the keyword-only figures of the same run,
   and the cold match (wall, RSS) with vectors beside the one without. ``--grid`` adds the grid of the
   channel's threshold and margin on the dev queries and tuning sets only, and the grid of the near-equivalent
   rule's two settings (skill-to-skill and message cosine).

Precision, recall and F1 are micro-averaged over all queries (a skill returned for a query needing none is a
false positive). Exact = the returned set equals the labelled set. Negatives = share of ``negative`` queries
with nothing returned; "empty-expected" adds the traps labelled with no skill.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.llm.config import LLMOptions

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)


#: Labelled messages of this repository's own: for tuning (beside the development queries), task-like messages
#: needing no skill and a set with positives; three held-out sets written before any tuning and never used for it.
TUNE_NEGATIVES = REPO / "bench" / "data" / "skills_tune_negatives.jsonl"
TUNE = REPO / "bench" / "data" / "skills_tune.jsonl"
TUNE_NAMES = REPO / "bench" / "data" / "skills_tune_names.jsonl"
HELD_OUT = REPO / "bench" / "data" / "skills_heldout.jsonl"
HELD_OUT2 = REPO / "bench" / "data" / "skills_heldout2.jsonl"
HELD_OUT3 = REPO / "bench" / "data" / "skills_heldout3.jsonl"
TUNING_SETS = (("task-like negatives (tuning)", TUNE_NEGATIVES), ("tuning set (tuning)", TUNE),
               ("names set (tuning)", TUNE_NAMES))
HELD_OUT_SETS = (("held-out (never tuned on)", HELD_OUT), ("held-out 2 (never tuned on)", HELD_OUT2),
                 ("held-out 3 (blind, never tuned on)", HELD_OUT3))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def load(data: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return read_jsonl(data / "catalog.jsonl"), read_jsonl(data / "queries_dev.jsonl")


def write_skills(catalog: list[dict[str, Any]], root: Path) -> Path:
    import yaml

    skills = root / "skills"
    for entry in catalog:
        folder = skills / entry["name"]
        folder.mkdir(parents=True)
        head = yaml.safe_dump({"name": entry["name"], "description": entry["description"]}, allow_unicode=True,
                              sort_keys=False, width=10**6)
        (folder / "SKILL.md").write_text(f"---\n{head}---\n", encoding="utf-8")
    return skills


def aiq_baseline(catalog: list[dict[str, Any]], query: str, top: int = 3) -> list[str]:
    words = [w for w in query.lower().split() if w]
    scored = []
    for e in catalog:
        name, desc = e["name"].lower(), e["description"].lower()
        s = sum(30 for w in words if w in name) + sum(10 for w in words if w in desc)
        if s > 0:
            scored.append((-s, e["name"]))
    return [n for _, n in sorted(scored)[:top]]


class Bm25s:
    def __init__(self, catalog: list[dict[str, Any]]) -> None:
        import bm25s  # type: ignore[import-untyped]
        import Stemmer  # type: ignore[import-not-found]

        self.bm25s, self.stemmer = bm25s, Stemmer.Stemmer("english")
        self.names = [e["name"] for e in catalog]
        texts = [e["name"].replace("-", " ") + " " + e["description"] for e in catalog]
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False),
                             show_progress=False)

    def scores(self, query: str, top: int = 3) -> list[tuple[str, float]]:
        toks = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not toks.vocab or not any(len(ids) for ids in toks.ids):
            return []
        docs, scores = self.retriever.retrieve(toks, k=top, show_progress=False, n_threads=1)
        return [(self.names[d], float(s)) for d, s in zip(docs[0], scores[0]) if s > 0]


def evaluate(queries: list[dict[str, Any]], predicted: list[list[str]]) -> dict[str, Any]:
    tp = fp = fn = exact = 0
    kinds: dict[str, list[int]] = {}
    neg_ok = neg_n = empty_ok = empty_n = 0
    for q, pred in zip(queries, predicted):
        rel, got = set(q["relevant"]), set(pred)
        t, f, n = len(rel & got), len(got - rel), len(rel - got)
        tp, fp, fn = tp + t, fp + f, fn + n
        exact += rel == got
        k = kinds.setdefault(q["kind"], [0, 0, 0, 0, 0])
        k[0] += t; k[1] += f; k[2] += n; k[3] += rel == got; k[4] += 1  # noqa: E702
        if q["kind"] == "negative":
            neg_n += 1
            neg_ok += not got
        if not rel:
            empty_n += 1
            empty_ok += not got
    out = _prf(tp, fp, fn)
    out.update(exact=exact / len(queries), negatives=neg_ok / max(neg_n, 1), empty_expected=empty_ok / max(empty_n, 1))
    out["kinds"] = {k: {**_prf(*v[:3]), "exact": v[3] / v[4], "n": v[4]} for k, v in sorted(kinds.items())}
    return out


def _prf(tp: int, fp: int, fn: int) -> dict[str, Any]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def run_kbindex(kb: KnowledgeBase, queries: list[dict[str, Any]], **kw: Any) -> tuple[list[list[str]], list[float], float]:
    first = time.perf_counter()
    kb.skills.match("warm up", use_llm=False, **kw)
    first_ms = (time.perf_counter() - first) * 1000
    preds, times = [], []
    for q in queries:
        t = time.perf_counter()
        out = kb.skills.match(q["query"], use_llm=False, **kw)
        times.append((time.perf_counter() - t) * 1000)
        preds.append([m["name"] for m in out["matched"]])
    return preds, times, first_ms


def fresh_times(kb: KnowledgeBase, queries: list[dict[str, Any]]) -> list[float]:
    """Per-call latency with the in-memory matcher index dropped first: what one CLI process pays."""
    from kb_indexer.skills import match

    times = []
    for q in queries:
        match._CACHE.clear()
        t = time.perf_counter()
        kb.skills.match(q["query"], use_llm=False)
        times.append((time.perf_counter() - t) * 1000)
    return times


def run_llm(kb: KnowledgeBase, queries: list[dict[str, Any]], opts: LLMOptions) -> dict[str, Any] | None:
    """The LLM matcher on every query (cache off); None when no backend is configured or reachable."""
    from kb_indexer.llm.config import is_configured, resolve

    if not is_configured(opts):
        print("\nLLM matcher: no LLM backend configured (--llm-backend or KBINDEX_LLM_BACKEND): skipped")
        return None
    config = resolve(opts)
    preds, times, tokens, fallbacks = [], [], [], []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        out = kb.skills.match(q["query"], use_llm=True, llm=opts)
        times.append((time.perf_counter() - t) * 1000)
        if i == 0 and out["fallback_reason"] and out["llm"] and out["llm"].get("called"):
            print(f"\nLLM matcher: {config.backend} not usable ({out['fallback_reason']}): skipped")
            return None
        preds.append([m["name"] for m in out["matched"]])
        if out["prompt_tokens_estimate"]:
            tokens.append(out["prompt_tokens_estimate"])
        if out["fallback_reason"]:
            fallbacks.append(out["fallback_reason"])
    return {"backend": config.backend, "model": config.model, "metrics": evaluate(queries, preds),
            "p50": statistics.median(times), "tokens": statistics.mean(tokens) if tokens else 0.0,
            "fallbacks": fallbacks, "n": len(queries)}


def grid(kb: KnowledgeBase, queries: list[dict[str, Any]]) -> None:
    """The tuning grid: dev queries plus the tuning sets (never a held-out set)."""
    from kb_indexer.skills import match

    tuning = [read_jsonl(path) for _, path in TUNING_SETS]
    with_positives = [qs for qs in tuning if any(q["relevant"] for q in qs)]
    print("\nTuning grid (dev queries + tuning sets): min_score common_factor -> dev F1, tuning-sets F1 "
          "(pooled), negatives (dev + every tuning set)")
    rows = []
    saved = match.COMMON_FACTOR
    for cf in (1.0, 1.1, 1.2, 1.3):
        for ms in (1.4, 1.5, 1.6, 1.7, 1.8, 2.0):
            match.COMMON_FACTOR = cf
            dev = evaluate(queries, run_kbindex(kb, queries, min_score=ms)[0])
            pooled = [q for qs in with_positives for q in qs]
            tune = evaluate(pooled, run_kbindex(kb, pooled, min_score=ms)[0])
            negs = [q for qs in [queries, *tuning] for q in qs if q["kind"] == "negative"]
            neg = evaluate(negs, run_kbindex(kb, negs, min_score=ms)[0])["negatives"]
            rows.append((dev["f1"], tune["f1"], cf, ms, neg))
    match.COMMON_FACTOR = saved
    for f1, tf1, cf, ms, neg in sorted(rows, key=lambda r: (-(r[4] >= 0.9), -(r[0] + r[1])))[:12]:
        print(f"  {ms:4.1f}  {cf:4.2f}  dev F1 {f1:.3f}  tuning F1 {tf1:.3f}  negatives {neg:.2f}")


def cold(db: Path, runs: int, code: Path = REPO) -> tuple[float, float, float]:
    """Median wall ms of a cold ``skills match`` and of ``python -c pass``, and the match's peak RSS (MB)."""
    env = dict(os.environ, PYTHONPATH=str(code))
    cmd = [sys.executable, "-m", "kb_indexer", "skills", "match", "turn off the Samsung TV", "--no-llm",
           "--db", str(db), "--format", "json"]

    def median(c: list[str]) -> float:
        ts = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(c, env=env, check=True, capture_output=True)
            ts.append((time.perf_counter() - t) * 1000)
        return statistics.median(ts)

    # the peak RSS through a small launcher: a child of this (large) process would report this process's
    # RSS too (Linux keeps the high-water mark across fork and exec)
    launcher = [sys.executable, "-c", "import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:], "
                "stdout=subprocess.DEVNULL); print(os.wait4(p.pid, 0)[2].ru_maxrss)"]
    rss = statistics.median(int(subprocess.run(launcher + cmd, env=env, check=True, capture_output=True,
                                               text=True).stdout) / 1024 for _ in range(max(1, min(runs, 3))))
    return median(cmd), median([sys.executable, "-c", "pass"]), rss


def outputs(kb: KnowledgeBase, queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(kb.skills.match(q["query"], use_llm=False)) for q in queries]


def _names(out: dict[str, Any], channel: str | None = None) -> list[str]:
    return [m["name"] for m in out["matched"] if channel is None or channel in m["source"].split("+")]


def _with_channel(out: dict[str, Any], t: float, margin: float, veto: float | None) -> list[str]:
    """The match of one run's output under other channel settings (its keyword matches and cosines)."""
    v = out["vectors"]
    got = [k["name"] for k in v["keyword"] if veto is None or k["cosine"] >= veto]
    if v["best"] >= t and v["best"] - v["next"] >= margin and v["best_skill"] not in got:
        got = (got + [v["best_skill"]])[:out["top"]]
    return got


def vector_grid(results: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> None:
    """The channel's settings on the dev queries and tuning sets (pooled), from one run's cosines."""
    pooled = [(q, out) for qs, outs in results.values() for q, out in zip(qs, outs)]
    qs = [q for q, _ in pooled]
    rows = []
    for t in [x / 100 for x in range(40, 66, 2)]:
        for margin in (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15):
            for veto in (None, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25):
                m = evaluate(qs, [_with_channel(out, t, margin, veto) for _, out in pooled])
                rows.append((m["negatives"] >= 0.9, round(m["f1"], 3), t, margin, -1.0 if veto is None else veto,
                             m["negatives"]))
    print("\nVector channel grid (dev + tuning sets pooled, never a held-out set; without the near-equivalent rule): "
          "best F1 with negatives >= 0.9, of equal F1 the higher thresholds (min cosine, margin, keyword veto)")
    for _, f1, t, margin, veto, neg in sorted(rows, key=lambda r: (not r[0], -r[1], -r[2], -r[3], -r[4]))[:10]:
        print(f"  min cosine {t:.2f}  margin {margin:.2f}  keyword veto {'none' if veto < -0.5 else f'{veto:.2f}'}  "
              f"F1 {f1:.3f}  negatives {neg:.2f}")


def neighbour_grid(kb: KnowledgeBase, results: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> None:
    """The near-equivalent rule's two settings on the dev queries and tuning sets (pooled), each a real match
    run; the channel's other settings as they are."""
    from kb_indexer.skills import vectors

    qs = [q for qs, _ in results.values() for q in qs]
    saved = vectors.NEIGHBOUR_COSINE, vectors.NEIGHBOUR_MIN_COSINE
    rows = []
    for near in (0.65, 0.7, 0.75, 0.8, 1.01):   # 1.01: the rule off
        for least in (0.3, 0.35, 0.4):
            vectors.NEIGHBOUR_COSINE, vectors.NEIGHBOUR_MIN_COSINE = near, least
            m = evaluate(qs, [_names(o) for o in outputs(kb, qs)])
            rows.append((m["negatives"] >= 0.9, round(m["f1"], 3), near, least, m["negatives"]))
    vectors.NEIGHBOUR_COSINE, vectors.NEIGHBOUR_MIN_COSINE = saved
    print("\nNear-equivalent grid (dev + tuning sets pooled, never a held-out set): skill cosine, message cosine "
          "(skill cosine 1.01: the rule off)")
    for _, f1, near, least, neg in sorted(rows, key=lambda r: (not r[0], -r[1], -r[2], -r[3]))[:10]:
        print(f"  skill cosine {near:.2f}  message cosine {least:.2f}  F1 {f1:.3f}  negatives {neg:.2f}")


def _print_vectors(kb: KnowledgeBase, db: Path, queries: list[dict[str, Any]], args: argparse.Namespace,
                   cold_keyword: tuple[float, float, float] | None) -> None:
    """Section 7 of the module text: the sets with the vectors beside keyword-only, and the cold cost."""
    from kb_indexer.skills.vectors import model_problem

    why = model_problem()
    if why:
        print(f"\nSemantic channel: skipped ({why})")
        return
    t = time.perf_counter()
    embedded = kb.skills.embed()
    print(f"\nskills embed: {embedded['embedded']} skills, {embedded['model']} ({embedded['dim']} dims), "
          f"{(time.perf_counter() - t):.1f} s")
    sets = [("dev queries (tuning)", queries)] + [(label, read_jsonl(p)) for label, p in
                                                  TUNING_SETS + (() if args.no_heldout else HELD_OUT_SETS)]
    tuning: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    print("Same run, keyword-only beside keyword+vectors:")
    for label, qs in sets:
        outs = outputs(kb, qs)
        assert all(o["method"] == "keyword+vectors" for o in outs)
        if "tuning" in label:
            tuning[label] = (qs, outs)
        print(f"  {label}: {len(qs)} messages")
        print("  " + _line("kbindex keyword", evaluate(qs, [[k["name"] for k in o["vectors"]["keyword"]]
                                                            for o in outs])))
        both = evaluate(qs, [_names(o) for o in outs])
        print("  " + _line("kbindex keyword+vectors", both))
        if args.kinds:
            print("    per kind: " + "; ".join(f"{k} n={m['n']} P {m['precision']:.2f} R {m['recall']:.2f} "
                                            f"exact {m['exact']:.2f}" for k, m in both["kinds"].items()))
    if args.grid:
        vector_grid(tuning)
        neighbour_grid(kb, tuning)
    if args.cold and cold_keyword:
        ours, base, rss = cold(db, args.cold, args.code.resolve())
        kw, kw_base, kw_rss = cold_keyword
        print(f"\ncold `skills match --no-llm` with vectors: median {ours:.0f} ms, RSS {rss:.0f} MB "
              f"(`python -c pass` {base:.0f} ms); without vectors: {kw:.0f} ms, RSS {kw_rss:.0f} MB "
              f"(`python -c pass` {kw_base:.0f} ms); {args.cold} runs each")


def _line(label: str, m: dict[str, Any], p50: float | None = None) -> str:
    lat = f"  p50 {p50:6.2f} ms" if p50 is not None else ""
    return (f"{label:<26} P {m['precision']:.3f}  R {m['recall']:.3f}  F1 {m['f1']:.3f}  exact {m['exact']:.3f}  "
            f"negatives {m['negatives']:.2f}  empty-expected {m['empty_expected']:.2f}{lat}")


def _print_llm(kb: KnowledgeBase, queries: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from kb_indexer.llm.config import LLMOptions

    opts = LLMOptions(backend=args.llm_backend, model=args.llm_model, timeout=args.llm_timeout, no_cache=True)
    res = run_llm(kb, queries, opts)
    if res is None:
        return
    print(f"\nLLM matcher ({res['backend']}, {res['model'] or 'server default'}; {res['n']} queries, cache off):")
    print(_line("kbindex llm", res["metrics"], res["p50"]) + f"  prompt ~{res['tokens']:.0f} tokens (mean est.)")
    if res["fallbacks"]:
        print(f"  {len(res['fallbacks'])} fell back to the keyword result, e.g. {res['fallbacks'][0]}")


def _print_other_sets(kb: KnowledgeBase, catalog: list[dict[str, Any]], bm25s: tuple[Bm25s, float] | None,
                      sets: tuple[tuple[str, Path], ...]) -> None:
    """The same matchers on this repository's labelled sets; bm25s keeps the threshold tuned on the dev queries."""
    for label, path in sets:
        qs = read_jsonl(path)
        kinds = ", ".join(f"{k} {sum(q['kind'] == k for q in qs)}" for k in sorted({q["kind"] for q in qs}))
        print(f"\n{label}: {len(qs)} messages ({kinds})")
        print(_line("kbindex keyword", evaluate(qs, run_kbindex(kb, qs)[0])))
        print(_line("aiq-style substring", evaluate(qs, [aiq_baseline(catalog, q["query"]) for q in qs])))
        if bm25s:
            bm, th = bm25s
            print(_line(f"bm25s top3 >= {th:.1f} (dev)", evaluate(qs, [[n for n, s in bm.scores(q["query"]) if s >= th]
                                                                     for q in qs])))


def bm25s_tuned(catalog: list[dict[str, Any]], queries: list[dict[str, Any]]) -> tuple[Bm25s, float, dict[str, Any]]:
    """The bm25s baseline with the threshold of best F1 on ``queries`` (a generous baseline) and its metrics."""
    bm = Bm25s(catalog)
    raw = [bm.scores(q["query"]) for q in queries]
    metrics, th = max(((evaluate(queries, [[n for n, s in r if s >= th] for r in raw]), th)
                       for th in [x / 2 for x in range(0, 31)]), key=lambda mt: mt[0]["f1"])
    return bm, th, metrics


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = next((d for d in (data_dir("skills"),) if d.is_dir()), None)
    p.add_argument("--data", type=Path, default=default, required=default is None,
                   help="folder with catalog.jsonl and queries_dev.jsonl (default: ../shared/data/skills)")
    p.add_argument("--grid", action="store_true", help="print the tuning grid too")
    p.add_argument("--cold", type=int, default=7, help="cold CLI runs to time (0: skip)")
    p.add_argument("--no-bm25s", action="store_true")
    p.add_argument("--no-heldout", action="store_true", help="leave the held-out sets out (tuning runs)")
    p.add_argument("--no-vectors", action="store_true", help="leave the semantic channel out")
    p.add_argument("--kinds", action="store_true", help="per-kind figures of every set with the vectors (aggregates)")
    p.add_argument("--code", type=Path, default=REPO,
                   help="the checkout whose kb_indexer is evaluated (default: this one)")
    p.add_argument("--llm", action="store_true", help="also run the LLM matcher with the configured backend")
    p.add_argument("--llm-backend", default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--llm-timeout", type=float, default=None)
    p.add_argument("--llm-limit", type=int, default=0, help="only the first N queries for --llm (0: all)")
    args = p.parse_args(argv)
    sys.path.insert(0, str(args.code.resolve()))
    from kb_indexer.api import KnowledgeBase

    print(f"kb_indexer from {Path(sys.modules['kb_indexer'].__file__ or '.').parent.parent}")

    catalog, queries = load(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        skills = write_skills(catalog, root)
        kb, _ = KnowledgeBase.init(root / "kbindex.db", root / "kb")
        t = time.perf_counter()
        synced = kb.skills.sync([str(skills)])
        print(f"skills sync: {synced['skills']} skills, {len(synced['errors'])} errors, "
              f"{(time.perf_counter() - t) * 1000:.0f} ms; {len(queries)} dev queries")
        preds, times, first_ms = run_kbindex(kb, queries)
        ours = evaluate(queries, preds)
        aiq = evaluate(queries, [aiq_baseline(catalog, q["query"]) for q in queries])
        fresh = fresh_times(kb, queries)
        print(_line("kbindex keyword", ours, statistics.median(times)) + " (warm: index kept in process)")
        print(f"{'':<26} p50 {statistics.median(fresh):6.2f} ms fresh: index built per call, as one "
              f"`kbindex skills match` process pays (first call of this run {first_ms:.1f} ms)")
        print(_line("aiq-style substring", aiq))
        bm25s = None
        if not args.no_bm25s:
            bm, th, metrics = bm25s_tuned(catalog, queries)
            print(_line(f"bm25s top3 >= {th:.1f} (tuned)", metrics))
            bm25s = (bm, th)
        _print_other_sets(kb, catalog, bm25s, TUNING_SETS + (() if args.no_heldout else HELD_OUT_SETS))
        print("\nPer kind, dev queries (kbindex keyword | aiq-style):")
        for kind, m in ours["kinds"].items():
            a = aiq["kinds"][kind]
            print(f"  {kind:<10} n={m['n']:<3} F1 {m['f1']:.3f} exact {m['exact']:.3f} | F1 {a['f1']:.3f} "
                  f"exact {a['exact']:.3f}")
        if args.grid:
            grid(kb, queries)
        if args.llm:
            _print_llm(kb, queries[:args.llm_limit] if args.llm_limit else queries, args)
        cold_keyword = cold(root / "kbindex.db", args.cold, args.code.resolve()) if args.cold else None
        if cold_keyword:
            ours_ms, base_ms, rss = cold_keyword
            print(f"\ncold `python -m kb_indexer skills match --no-llm`: median {ours_ms:.0f} ms, RSS {rss:.0f} MB; "
                  f"`python -c pass`: {base_ms:.0f} ms; ratio {ours_ms / base_ms:.1f}x ({args.cold} runs each)")
        if not args.no_vectors:
            _print_vectors(kb, root / "kbindex.db", queries, args, cold_keyword)
        kb.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
