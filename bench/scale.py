"""Scale benchmark: a realistic synthetic knowledge base of N documents, measured through the real paths.

    python bench/scale.py [--docs 10000] [--runs 11] [--queries 100] [--keep DIR] [--baseline-src DIR]
    python bench/scale.py --docs 50000                       # the size the targets below are set for
    python bench/scale.py --docs 1000,10000,50000,100000     # each size, then one table side by side
    python bench/scale.py --docs 20000 --variants             # each preset corpus (layouts, seeds, shares)
    python bench/scale.py --docs 10000 --seed 3 --layout nested --front-matter 0.8 --keywords-files 0.5
    python bench/scale.py --docs 10000 --bm25s                # also bm25s's in-memory sparse index

    python bench/scale.py --docs 50000 --variants --keep DIR  # the targets on every preset corpus, kept for reruns

The generator draws words with the unigram frequencies of the Cranfield collection
(../shared/data/cranfield), 300-1,500 words a document in paragraphs; a share of the documents (--front-matter)
opens with a YAML front-matter block (title, tags in a flow list, a date, a folded description); a share
(--keywords-files) has a ``<doc>.keywords.json`` beside it (5-12 keywords from Cranfield's frequent word pairs,
Zipf-skewed); similarities.json holds --relations typed relations (default N/2, a third directional). Folder
layouts (--layout): ``round-robin`` (100 folders, every one written to until the end, as a bulk copy
does), ``nested`` (400 folders two deep, written one after the other) or ``flat`` (one folder). Questions
mix Cranfield questions, keyword phrases, single words and "how does X relate to Y?". As real notes do, a
corpus may also hold rare names and codes from a vocabulary that keeps growing with it (--rare: their share of
the body's tokens), more keywords per file drawn with a stronger skew (--keywords-per-doc, --zipf: the commonest
tags on thousands of documents) and log-normal body lengths (--lengths); its questions then add two-word
queries, identifiers and explicit ``--keywords``. The presets of --variants: ``default``, ``nested``, ``flat``
and ``growing`` (all of those at once).

At the end, the figures of the skills matcher on the held-out sets and of the MCP start beside their targets
(bench/other_targets.py; --no-other-targets skips them).

Figures, each beside a baseline measured in the same run, and the scale targets (sync >=
1,000 docs/s at 50k documents with keywords files and 25k relations; a cold query <= 8x `python -c pass`
right after the first sync of a freshly written knowledge base and after a second sync) marked pass / MISS:
- `kbindex sync` (the installed command, running this checkout): docs/s, CPU seconds, peak RSS, peak WAL
  size, batches; the longest wait of a concurrent `relate` loop for the write lock (baseline: the 30 s busy
  timeout it must stay far under); baseline throughput: the same bodies inserted into a bare FTS5 table in
  one transaction.
- right after that first sync: what the stale check of the next query does (mode, folders listed) and the
  cold `kbindex query` (wall and CPU time, median of --runs over the question mix) beside `python -c pass`.
- no-change re-sync (`kbindex sync`) and the stale check (quick and full) in seconds.
- cold `kbindex query` with and without `--no-stale-check` after the second sync, beside `python -c pass`.
- in-process `KnowledgeBase.query` p50/p95 over the question mix, beside the same query with the sparse
  full-text index off (KBINDEX_SPARSE_MIN_DOCS above the size: full text on FTS5) and a naive FTS5 top-10
  (`MATCH ... ORDER BY rank LIMIT 10`) on the same index.
- index size per document.
- with --baseline-src: the sync, re-sync and cold queries of this checkout and of the older one, each run the
  same way back to back (``python -m kb_indexer``, an index file of its own, no concurrent ``relate`` loop,
  which the first sync above shares the machine and the write lock with).
CPU times are given beside wall times because on a shared machine other load inflates wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from kb_indexer.api import QueryOptions  # noqa: E402 (after the path is set)

from bench.foundation import kbindex_cmd  # noqa: E402
from bench.scale_corpus import Corpus, Vocabulary, generate  # noqa: E402

# Users run with bytecode caching; a sandbox may turn it off (PYTHONDONTWRITEBYTECODE): not for these runs.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# The installed `kbindex` command runs this checkout's code (an editable install may point elsewhere).
ENV["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), ENV.get("PYTHONPATH")]))

def _run(args: list[str], cwd: Path) -> tuple[float, dict[str, Any]]:
    secs, out, _, _ = _run_rss(args, cwd)
    return secs, out


# Linux keeps a process's peak RSS across exec: a command started straight from this (large) process
# would report this process's size as its own peak. A small launcher starts it and reports its wait4 peak.
_LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _run_rss(args: list[str], cwd: Path) -> tuple[float, dict[str, Any], float, float]:
    """Seconds, JSON answer, peak RSS (MB: the command's process, or its largest reader process) and CPU
    seconds (the command and its reader processes)."""
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rss_file = Path(tmp) / "maxrss"
        proc = subprocess.run([sys.executable, "-c", _LAUNCHER, str(rss_file), *kbindex_cmd(), *args, "--format",
                               "json"], cwd=cwd, capture_output=True, env=ENV)
        secs = time.perf_counter() - t
        if proc.returncode != 0:
            raise SystemExit(f"kbindex {' '.join(args)} failed: {proc.stderr.decode()[-2000:]}")
        rss, cpu = rss_file.read_text().split()
        return secs, json.loads(proc.stdout), int(rss) / 1024, float(cpu)


class LockProbe(threading.Thread):
    """While a sync runs: `relate` in a loop on its own connection (the longest wait for the write lock),
    and the WAL file's size."""

    def __init__(self, db: Path):
        super().__init__(daemon=True)
        self.db, self.stop, self.wal_peak = db, threading.Event(), 0
        self.waits: list[float] = []
        self.errors: list[str] = []

    def run(self) -> None:
        from kb_indexer.api import KnowledgeBase

        kb = KnowledgeBase.open(self.db)
        i = 0
        while not self.stop.is_set():
            wal = self.db.with_name(self.db.name + "-wal")
            self.wal_peak = max(self.wal_peak, wal.stat().st_size if wal.exists() else 0)
            t = time.perf_counter()
            try:
                kb.relate(f"probe term {i}", f"probe other {i}", "related_concept", "lock probe", 0.5)
            except Exception as exc:  # noqa: BLE001 - a failure is a figure here
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.waits.append(time.perf_counter() - t)
            i += 1
            time.sleep(0.2)
        kb.close()


def bench_sync(root: Path, docs: int) -> dict[str, Any]:
    _run(["init"], root)
    probe = LockProbe(root / "kbindex.db")
    probe.start()
    load_before = os.getloadavg()[0]
    secs, res, rss_mb, cpu_s = _run_rss(["sync"], root)
    load_after = os.getloadavg()[0]
    probe.stop.set()
    probe.join()
    assert res["added"] == docs, (res["added"], res["errors"][:3])
    fold = res.get("fulltext_index") or {}
    return {"sync_s": secs, "docs_s": docs / secs, "cpu_s": cpu_s, "batches": res["batches"], "rss_mb": rss_mb,
            "fold_s": fold.get("seconds", 0.0), "segments": fold.get("segments", 0),
            "wal_mb": probe.wal_peak / 1e6, "relate_max_s": max(probe.waits, default=0.0),
            "relate_n": len(probe.waits), "relate_errors": probe.errors[:3], "load": (load_before, load_after)}


def naive_fts_insert(kb_dir: Path) -> float:
    bodies = [p.read_text(encoding="utf-8") for p in sorted(kb_dir.rglob("*.md"))]
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "naive.db")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE VIRTUAL TABLE f USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
        t = time.perf_counter()
        with conn:
            conn.executemany("INSERT INTO f (body) VALUES (?)", ((b,) for b in bodies))
        secs = time.perf_counter() - t
        conn.close()
    return len(bodies) / secs


def cold(root: Path, runs: int, questions: list[Question], *, variants: bool = True) -> dict[str, Any]:
    """Median wall time (ms) of a cold ``kbindex query`` over ``runs`` runs, cycling through ``questions``;
    ``*_cpu_ms``: the median CPU time (user + system) of the same runs, which other load on a shared
    machine disturbs less than wall time."""
    def med(name: str, cmd: list[str], extra: tuple[str, ...] | list[str] = ()) -> None:
        subprocess.run(cmd + [*extra, *questions[0]], cwd=root, capture_output=True, env=ENV)  # warm-up
        wall, cpu = [], []
        for i in range(runs):
            w, c = _timed(cmd + [*extra, *questions[i % len(questions)]], root)
            wall.append(w)
            cpu.append(c)
        res[name], res[name.replace("_ms", "_cpu_ms")] = statistics.median(wall), statistics.median(cpu)

    res: dict[str, float] = {}
    passes = [_timed([sys.executable, "-c", "pass"], root) for _ in range(runs)]
    res["pass_ms"], res["pass_cpu_ms"] = (statistics.median(x[0] for x in passes),
                                          statistics.median(x[1] for x in passes))
    q = kbindex_cmd() + ["query", "--format", "json"]
    med("query_ms", q)
    if variants:
        med("query_nostale_ms", q, ["--no-stale-check"])
        med("query_fts5_ms", ["env", f"KBINDEX_SPARSE_MIN_DOCS={SPARSE_OFF}"] + q)
    return res


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms of the process and its children) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, capture_output=True, check=True, env=ENV)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


#: One question of the mix: the arguments of ``kbindex query`` after ``query`` (a question, or ``-k`` keywords).
Question = list[str]


def question_mix(vocab: Vocabulary, n: int, seed: int, rare: list[str] | None = None) -> list[Question]:
    """Cranfield questions, keyword phrases, single words and keyword questions, interleaved; with ``rare``
    (a corpus with rare names and codes), also two-word queries, identifiers and explicit ``--keywords``."""
    rng = random.Random(seed)
    natural = [q["text"] for q in vocab.queries]
    kws = vocab.keywords[:2000]
    kinds: list[Callable[[], Question]] = [
        lambda: [rng.choice(natural)], lambda: [rng.choice(kws)], lambda: [rng.choice(vocab.words[50:3000])],
        lambda: [f"how does {rng.choice(kws)} relate to {rng.choice(kws)}?"]]
    if rare:
        kinds += [lambda: [" ".join(rng.sample(vocab.words[50:3000], 2))], lambda: [rng.choice(rare)],
                  lambda: ["-k", rng.choice(kws), rng.choice(kws)],
                  lambda: [f"what is {rng.choice(rare)} in {rng.choice(kws)}?"]]
    return [kinds[i % len(kinds)]() for i in range(n)]


def _in_process_args(q: Question) -> tuple[str, list[str] | None]:
    """``kbindex query``'s arguments as (question, keywords) of ``KnowledgeBase.query``."""
    return ("", q[1:]) if q[0] == "-k" else (" ".join(q), None)


SPARSE_OFF = 10 ** 12   # KBINDEX_SPARSE_MIN_DOCS for "no sparse index": full text on FTS5, as before it


def in_process(root: Path, questions: list[Question]) -> dict[str, Any]:
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.search import fulltext
    from kb_indexer.search.terms import content_terms, parse_text

    kb = KnowledgeBase.open(root / "kbindex.db")
    ours, naive, fts5 = [], [], []
    for args in questions:
        q, keywords = _in_process_args(args)
        t = time.perf_counter()
        kb.query(q, keywords, options=QueryOptions(record=False))
        ours.append((time.perf_counter() - t) * 1000)
        os.environ["KBINDEX_SPARSE_MIN_DOCS"] = str(SPARSE_OFF)   # the same query with full text on FTS5
        t = time.perf_counter()
        kb.query(q, keywords, options=QueryOptions(record=False))
        fts5.append((time.perf_counter() - t) * 1000)
        del os.environ["KBINDEX_SPARSE_MIN_DOCS"]
        match = fulltext.build_query(content_terms(parse_text(q or " ".join(keywords or [])).words)).match
        t = time.perf_counter()
        if match:
            kb.conn.execute("SELECT rowid FROM documents_fts WHERE documents_fts MATCH ? ORDER BY rank LIMIT 10",
                            (match,)).fetchall()
        naive.append((time.perf_counter() - t) * 1000)
    quick = kb.stale()
    full = kb.stale(full=True)
    kb.close()
    def pct(xs: list[float], p: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
    return {"p50": pct(ours, .5), "p95": pct(ours, .95), "naive_p50": pct(naive, .5), "naive_p95": pct(naive, .95),
            "fts5_p50": pct(fts5, .5), "fts5_p95": pct(fts5, .95),
            "stale_quick_s": quick["seconds"], "stale_mode": quick["mode"], "stale_full_s": full["seconds"]}


PRESETS = {  # --variants: the same size under other generator settings (each a full measurement)
    "default": Corpus(),
    "nested": Corpus(seed=11, layout="nested", front_matter=0.8, keywords_files=0.5),
    "flat": Corpus(seed=23, layout="flat", front_matter=0.0, keywords_files=1.0),
    # as real notes: a vocabulary that keeps growing (names, codes), 8-12 keywords drawn with a stronger skew
    # (the commonest tags on thousands of documents), a tenth without a keywords file, log-normal lengths
    "growing": Corpus(seed=31, front_matter=0.3, keywords_files=0.9, rare=0.04, keywords=(8, 12), zipf=1.0,
                      lengths="lognormal"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", default="10000", help="one size, or several comma-separated (1000,10000,100000)")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7, help="generator seed")
    ap.add_argument("--layout", choices=["round-robin", "nested", "flat"], default="round-robin",
                    help="round-robin: 100 folders all written to the end; nested: 400 folders two deep, "
                    "written one after the other; flat: one folder")
    ap.add_argument("--front-matter", type=float, default=0.3, help="share of documents with front matter")
    ap.add_argument("--keywords-files", type=float, default=1.0, help="share of documents with a keywords file")
    ap.add_argument("--relations", type=int, help="typed relations in similarities.json (default: docs / 2)")
    ap.add_argument("--rare", type=float, default=0.0, help="share of body tokens that are rare names and codes "
                    "(a vocabulary that grows with the collection)")
    ap.add_argument("--keywords-per-doc", default="5-12", help="keywords a keywords file lists, MIN-MAX")
    ap.add_argument("--zipf", type=float, default=0.8, help="skew of the keyword draw (1 / rank ** zipf)")
    ap.add_argument("--lengths", choices=["uniform", "lognormal"], default="uniform",
                    help="body lengths: uniform 300-1,500 words, or log-normal (median 600, cut to 300-1,500)")
    ap.add_argument("--variants", action="store_true", help="measure each size under every preset corpus ("
                    + ", ".join(PRESETS) + ") instead of the one the options above describe")
    ap.add_argument("--keep", type=Path, help="build the knowledge base(s) here and keep them; a later run with "
                    "the same --keep, size and generator settings reuses them (a fresh index each run)")
    ap.add_argument("--bm25s", action="store_true", help="also index the documents with bm25s (a dedicated sparse "
                    "index in memory) and time its top-10 on the same questions: the alternative to FTS5")
    ap.add_argument("--baseline-src", type=Path, help="a checkout of an older kbindex (e.g. `git worktree add "
                    "/tmp/old <rev>`): its sync, re-sync and cold query are measured on the same knowledge base")
    ap.add_argument("--no-other-targets", action="store_true", help="skip the figures of the skills matcher "
                    "on the held-out sets and of the MCP start printed at the end (bench/other_targets.py)")
    args = ap.parse_args()
    sizes = [int(n.replace("_", "")) for n in args.docs.split(",") if n.strip()]
    corpora = dict(PRESETS) if args.variants else {"options": Corpus(
        seed=args.seed, layout=args.layout, front_matter=args.front_matter, keywords_files=args.keywords_files,
        relations=args.relations, rare=args.rare, zipf=args.zipf, lengths=args.lengths,
        keywords=_range(args.keywords_per_doc))}
    vocab = Vocabulary()
    table = {}
    for docs in sizes:
        for name, corpus in corpora.items():
            with tempfile.TemporaryDirectory() as tmp:
                root = args.keep / f"{docs}-{name}" if args.keep else Path(tmp)
                root.mkdir(parents=True, exist_ok=True)
                table[f"{docs:,} {name}" if len(corpora) > 1 else f"{docs:,}"] = measure(root, docs, vocab,
                                                                                          corpus, args)
    if len(table) > 1:
        summary(table)
    if not args.no_other_targets:
        from bench.other_targets import main as other_targets
        print()
        other_targets()


def _range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def measure(root: Path, docs: int, vocab: Vocabulary, corpus: Corpus, args: argparse.Namespace) -> dict[str, Any]:
    """Every figure for one size and corpus; printed, and returned for the summary table."""
    kb_dir = written(root, docs, vocab, corpus)
    rare_file = root / "rare-words.json"
    rare = json.loads(rare_file.read_text(encoding="utf-8")) if corpus.rare and rare_file.is_file() else None
    questions = question_mix(vocab, max(args.queries, 8), corpus.seed, rare)
    s = bench_sync(root, docs)
    first = {"stale": stale_info(root), "cold": cold(root, args.runs, questions, variants=False)}
    naive = naive_fts_insert(kb_dir)
    resync_s, again = _run(["sync"], root)
    assert again["unchanged"] == docs
    c = cold(root, args.runs, questions)
    p = in_process(root, questions)
    db_kb = (root / "kbindex.db").stat().st_size / 1024 / docs
    report(docs, corpus, s, naive, resync_s, c, p, db_kb, first)
    if args.bm25s:
        p.update(bm25s_compare(kb_dir, questions))
    if args.baseline_src:
        report_old(baseline(root, args.baseline_src, args.runs, questions, docs))
    return {"sync": s, "naive": naive, "resync_s": resync_s, "cold": c, "inproc": p, "db_kb": db_kb,
            "first": first}


def written(root: Path, docs: int, vocab: Vocabulary, corpus: Corpus) -> Path:
    """The knowledge base for ``docs`` and ``corpus`` in ``root``: the one a run with ``--keep`` wrote there
    before (``corpus.json`` says which), or written now. The indexes of an earlier run are deleted."""
    stamp, want = root / "corpus.json", {"docs": docs, "corpus": corpus.label()}
    for name in ("kbindex.db", "this.db", "old.db"):
        for suffix in ("", "-wal", "-shm"):
            (root / (name + suffix)).unlink(missing_ok=True)
    if stamp.is_file() and json.loads(stamp.read_text(encoding="utf-8")) == want:
        print(f"reusing the {docs} documents in {root} ({corpus.label()})", file=sys.stderr)
        return root / "knowledge-base"
    t = time.perf_counter()
    kb_dir = generate(root, docs, vocab, corpus)
    stamp.write_text(json.dumps(want), encoding="utf-8")
    print(f"generated {docs} documents in {time.perf_counter() - t:.0f} s ({root}; {corpus.label()})",
          file=sys.stderr)
    return kb_dir


def stale_info(root: Path) -> dict[str, Any]:
    """What the stale check of the next query does (mode, folders listed of all) on this index."""
    from kb_indexer.api import KnowledgeBase

    kb = KnowledgeBase.open(root / "kbindex.db")
    try:
        return kb.stale()
    finally:
        kb.close()


def bm25s_compare(kb_dir: Path, questions: list[Question]) -> dict[str, Any]:
    """bm25s over the same documents: build seconds, memory grown, top-10 p50/p95 per question."""
    import bm25s  # type: ignore[import-untyped]
    import Stemmer  # type: ignore[import-not-found]

    def rss_mb() -> float:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    before = rss_mb()
    t = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    texts = [p.read_text(encoding="utf-8") for p in sorted(kb_dir.rglob("*.md"))]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    build_s, grown = time.perf_counter() - t, rss_mb() - before
    del texts
    times = []
    for args in questions:
        q, keywords = _in_process_args(args)
        t = time.perf_counter()
        toks = bm25s.tokenize([q or " ".join(keywords or [])], stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.retrieve(toks, k=10, show_progress=False, n_threads=1)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    out = {"bm25s_build_s": build_s, "bm25s_mb": grown, "bm25s_p50": times[len(times) // 2],
           "bm25s_p95": times[min(len(times) - 1, int(.95 * len(times)))]}
    print(f"  bm25s (in memory, rebuilt from all documents: no incremental update): build {build_s:.1f} s, "
          f"+{grown:.0f} MB; top-10 p50 / p95 {out['bm25s_p50']:.1f} / {out['bm25s_p95']:.1f} ms")
    return out


def summary(table: dict[str, Any]) -> None:
    sizes = list(table)
    print("\nSide by side (baselines of the same runs in brackets)")
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("sync docs/s [bare FTS5 insert]", lambda m: f"{m['sync']['docs_s']:.0f} [{m['naive']:.0f}]"),
        ("sync peak RSS MB / WAL MB", lambda m: f"{m['sync']['rss_mb']:.0f} / {m['sync']['wal_mb']:.0f}"),
        ("index KB per document", lambda m: f"{m['db_kb']:.1f}"),
        ("no-change re-sync s", lambda m: f"{m['resync_s']:.2f}"),
        ("cold query after 1st sync ms [pass]", lambda m: f"{m['first']['cold']['query_ms']:.0f} "
         f"[{m['first']['cold']['pass_ms']:.0f}]"),
        ("folders listed after 1st sync", lambda m: f"{m['first']['stale'].get('folders_listed', '-')}/"
         f"{m['first']['stale'].get('folders', '-')}"),
        ("cold query ms [python -c pass]", lambda m: f"{m['cold']['query_ms']:.0f} [{m['cold']['pass_ms']:.0f}]"),
        ("cold query --no-stale-check ms", lambda m: f"{m['cold']['query_nostale_ms']:.0f}"),
        ("[cold query, sparse index off]", lambda m: f"[{m['cold']['query_fts5_ms']:.0f}]"),
        ("sparse index: fold s / segments", lambda m: f"{m['sync']['fold_s']:.1f} / {m['sync']['segments']}"),
        ("in-process p50/p95 ms", lambda m: f"{m['inproc']['p50']:.1f}/{m['inproc']['p95']:.1f}"),
        ("[same, sparse index off]", lambda m: f"[{m['inproc']['fts5_p50']:.1f}/{m['inproc']['fts5_p95']:.1f}]"),
        ("[naive FTS5 top-10 p50/p95 ms]", lambda m: f"[{m['inproc']['naive_p50']:.1f}/{m['inproc']['naive_p95']:.1f}]"),
    ]
    if all("bm25s_p50" in m["inproc"] for m in table.values()):
        rows += [("[bm25s top-10 p50/p95 ms]", lambda m: f"[{m['inproc']['bm25s_p50']:.1f}/{m['inproc']['bm25s_p95']:.1f}]"),
                 ("[bm25s build s / MB]", lambda m: f"[{m['inproc']['bm25s_build_s']:.0f}/{m['inproc']['bm25s_mb']:.0f}]")]
    width = max(len(r[0]) for r in rows)
    print(f"  {'documents':{width}s}" + "".join(f"{n:>16s}" for n in sizes))
    for name, cell in rows:
        print(f"  {name:{width}s}" + "".join(f"{cell(table[n]):>16s}" for n in sizes))


def baseline(root: Path, src: Path, runs: int, questions: list[Question], docs: int) -> dict[str, Any]:
    """The same steps with this checkout and then an older one, each measured the same way
    (``python -m kb_indexer`` on its PYTHONPATH, its own index file, no concurrent writer): sync of the knowledge
    base as just written (every folder's mtime set to now, as after the generator), cold query right after it,
    re-sync, cold query again. ``{"this": ..., "old": ...}``."""
    return {"this": _steps(root, REPO, "this.db", runs, questions, docs),
            "old": _steps(root, src, "old.db", runs, questions, docs)}


def _steps(root: Path, src: Path, db: str, runs: int, questions: list[Question], docs: int) -> dict[str, Any]:
    env = dict(ENV, PYTHONPATH=str(src.resolve()), KBINDEX_DB=str(root / db))
    cmd = [sys.executable, "-m", "kb_indexer"]
    cpu = {"s": 0.0}

    def run(*args: str) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd + list(args) + ["--format", "json"], cwd=root, env=env, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{src}: {args} failed: {proc.stderr[-1500:]}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu["s"] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return time.perf_counter() - t

    def queries(*extra: str) -> float:
        run("query", *extra, *questions[0])
        return statistics.median(run("query", *extra, *questions[i % len(questions)]) * 1000 for i in range(runs))

    for suffix in ("", "-wal", "-shm"):
        (root / (db + suffix)).unlink(missing_ok=True)
    run("init", "--kb", str(root / "knowledge-base"))
    for folder in [root / "knowledge-base", *(p for p in (root / "knowledge-base").rglob("*") if p.is_dir())]:
        os.utime(folder)
    sync_s = run("sync")
    sync_cpu = cpu["s"]
    first = queries()
    resync_s = run("sync")
    return {"docs_s": docs / sync_s, "cpu_s": sync_cpu, "resync_s": resync_s, "first_query_ms": first,
            "query_ms": queries(), "query_nostale_ms": queries("--no-stale-check")}


def report_old(both: dict[str, Any]) -> None:
    new, old = both["this"], both["old"]
    print("\n  the same steps, this checkout vs the --baseline-src checkout, each measured alike (python -m "
          "kb_indexer, no concurrent writer):")
    print(f"    sync docs/s                       {new['docs_s']:8.0f}  vs {old['docs_s']:8.0f}")
    print(f"    sync CPU s                        {new['cpu_s']:8.1f}  vs {old['cpu_s']:8.1f}")
    print(f"    cold query after the first sync  {new['first_query_ms']:8.0f}  vs {old['first_query_ms']:8.0f} ms")
    print(f"    no-change re-sync                 {new['resync_s']:8.2f}s vs {old['resync_s']:8.2f}s")
    print(f"    cold query                        {new['query_ms']:8.0f}  vs {old['query_ms']:8.0f} ms")
    print(f"    cold query, no stale check        {new['query_nostale_ms']:8.0f}  vs {old['query_nostale_ms']:8.0f} ms")


# Targets: sync throughput at 50k documents with keywords files and 25k relations; a
# cold query within this many times a bare interpreter start, right after the first sync and after a second.
TARGET_SYNC_DOCS_S = 1000
TARGET_COLD_RATIO = 8.0


def report(docs: int, corpus: Corpus, s: dict[str, Any], naive: float, resync_s: float, c: dict[str, Any], p: dict[str, Any], db_kb: float,
           first: dict[str, Any]) -> None:
    print(f"\nScale benchmark, {docs} documents (Cranfield word frequencies, 300-1,500 words each; {corpus.label()})")
    fs = first["stale"]
    rows = [
        ("sync (kbindex sync)", f"{s['docs_s']:.0f} docs/s in {s['sync_s']:.1f} s (CPU {s['cpu_s']:.1f} s), "
         f"{s['batches']} batches", f"bare FTS5 insert {naive:.0f} docs/s"),
        ("of which the sparse index", f"{s['fold_s']:.1f} s, {s['segments']} segments", "-"),
        ("machine load (1-min average) before / after sync", f"{s['load'][0]:.1f} / {s['load'][1]:.1f} "
         f"on {os.cpu_count()} CPUs", "-"),
        ("sync peak RSS / peak WAL", f"{s['rss_mb']:.0f} MB / {s['wal_mb']:.0f} MB", "-"),
        ("concurrent relate during sync, longest wait",
         f"{s['relate_max_s']:.2f} s over {s['relate_n']} writes, {len(s['relate_errors'])} failed",
         "busy timeout 30 s"),
        ("stale check right after the first sync", f"{fs.get('mode')} {fs['seconds'] * 1000:.0f} ms, "
         f"{fs.get('folders_listed', '-')} of {fs.get('folders', '-')} folders listed", "-"),
        ("cold kbindex query right after the first sync", f"{first['cold']['query_ms']:.0f} ms "
         f"(CPU {first['cold']['query_cpu_ms']:.0f} ms)", f"python -c pass {first['cold']['pass_ms']:.0f} ms "
         f"(CPU {first['cold']['pass_cpu_ms']:.0f} ms)"),
        ("re-sync, nothing changed", f"{resync_s:.2f} s", "-"),
        ("stale check", f"{p['stale_mode']} {p['stale_quick_s'] * 1000:.0f} ms", f"full {p['stale_full_s'] * 1000:.0f} ms"),
        ("cold kbindex query", f"{c['query_ms']:.0f} ms (CPU {c['query_cpu_ms']:.0f} ms)",
         f"python -c pass {c['pass_ms']:.0f} ms (CPU {c['pass_cpu_ms']:.0f} ms)"),
        ("cold kbindex query --no-stale-check", f"{c['query_nostale_ms']:.0f} ms", f"python -c pass {c['pass_ms']:.0f} ms"),
        ("cold kbindex query, sparse index off", f"{c['query_fts5_ms']:.0f} ms", "-"),
        ("in-process query p50 / p95", f"{p['p50']:.1f} / {p['p95']:.1f} ms",
         f"sparse index off {p['fts5_p50']:.1f} / {p['fts5_p95']:.1f}; naive FTS5 top-10 {p['naive_p50']:.1f} / "
         f"{p['naive_p95']:.1f} ms"),
        ("index size", f"{db_kb:.1f} KB per document", "-"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, ours, base in rows:
        print(f"  {name:{width}s}  {ours:45s}  baseline: {base}")
    if s["relate_errors"]:
        print("  relate errors:", s["relate_errors"])
    report_targets(s, first["cold"], c)


def report_targets(s: dict[str, Any], first: dict[str, Any], second: dict[str, Any]) -> None:
    """Each scale figure beside its target (pass / MISS)."""
    def line(name: str, value: str, target: str, ok: bool) -> None:
        print(f"  {name:44s} {value:>12s}   target {target:12s} {'pass' if ok else 'MISS'}")

    print("  targets:")
    line("sync docs/s", f"{s['docs_s']:.0f}", f">= {TARGET_SYNC_DOCS_S}", s["docs_s"] >= TARGET_SYNC_DOCS_S)
    for name, c in (("cold query / python -c pass, after 1st sync", first),
                    ("cold query / python -c pass, after 2nd sync", second)):
        ratio, cpu_ratio = c["query_ms"] / c["pass_ms"], c["query_cpu_ms"] / c["pass_cpu_ms"]
        line(name, f"{ratio:.1f}x", f"<= {TARGET_COLD_RATIO:.0f}x", ratio <= TARGET_COLD_RATIO)
        line("  the same in CPU time", f"{cpu_ratio:.1f}x", f"<= {TARGET_COLD_RATIO:.0f}x",
             cpu_ratio <= TARGET_COLD_RATIO)


if __name__ == "__main__":
    main()
