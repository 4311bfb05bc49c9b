"""Stress suite: concurrent processes, kill -9 at random moments, hostile files and arguments, LLM faults.

Everything runs through this checkout's ``kbindex`` in a subprocess (``kbindex.py`` under this interpreter:
the console script's ``kb_indexer.cli:main``, never a stale install first on PATH), the code path agents and
people use. Checks read the index with sqlite3 afterwards.

    python bench/stress.py                 # full: 8 processes for 30 s, 20 kill trials each on 20k documents
    python bench/stress.py --quick         # CI subset: a few seconds of mixing, 3 kill trials on 2k documents
    python bench/stress.py --duration 60 --procs 8 --trials 20 --docs 20000 --only mix,kill,hostile,llm

Sections
- mix: N processes run `query`, `feedback`, `relate`, `sync` and `learn` on one index. Fails on any non-zero
  exit, non-JSON stdout, "database is locked", or a feedback row that got exit 0 but is missing at the end.
  Prints p50/p95 per command.
- kill: `kill -9` at a random moment of `sync` (of the synthetic KB, a tenth of it edited before each later
  trial), `learn` (new feedback before each trial) and `import` (of an export into an empty index). After
  each kill: PRAGMA integrity_check and foreign_key_check ok; one full-text row per document; every
  document's keyword rows are those of either the old or the new keywords file (never a mix); no feedback
  half processed by learn; import all or nothing. Then the command is re-run and must complete, leaving the
  index exactly as an uninterrupted run would.
- hostile: FIFOs, sockets, symlink loops, invalid UTF-8 names and argv, 5,000-deep JSON, huge keywords,
  NaN/inf, ids > 2^63, a 2 MB document, paths outside the KB, a foreign SQLite file. A case fails if it
  hangs, exits with code `internal` (or a traceback), writes non-JSON to stdout under --format json, or
  leaves the index failing integrity_check.
- llm: bench/stress_llm.py's ``run(quick)`` when that module exists.

Exit status 1 when anything failed.
"""


from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.stress_common import (Section, integrity_problem, kb_run, kbindex_cmd, percentile,  # noqa: E402
                                 problem_with, scalar)
from bench.stress_hostile import run_hostile  # noqa: E402
from bench.synth_kb import generate  # noqa: E402
from kb_indexer.text import normalize_keyword  # noqa: E402


# -- set-up ---------------------------------------------------------------------------------------------------

def make_kb(work: Path, docs: int) -> tuple[Path, Path]:
    """A synthetic KB of ``docs`` documents, initialised (not yet synced). Returns (db, KB folder)."""
    generate(work, docs=docs, seed=11)
    db = work / "kbindex.db"
    out = kb_run("init", "--kb", work / "knowledge-base", db=db)
    assert out.code == 0, out.stderr
    return db, work / "knowledge-base"


def expected_keywords(kbdir: Path) -> dict[str, frozenset[str]]:
    out = {}
    for path in kbdir.rglob("*.keywords.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data["filepath"]] = frozenset(normalize_keyword(k) for k in data["keywords"])
    return out


def indexed_keywords(db: Path) -> dict[str, frozenset[str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT d.filepath, k.keyword FROM documents d LEFT JOIN document_keywords dk "
                            "ON dk.document_id = d.id AND dk.source != 'learned' "
                            "LEFT JOIN keywords k ON k.id = dk.keyword_id").fetchall()
    finally:
        conn.close()
    out: dict[str, set] = {}
    for path, keyword in rows:
        out.setdefault(path, set())
        if keyword is not None:
            out[path].add(keyword)
    return {k: frozenset(v) for k, v in out.items()}



# -- mix: concurrent processes --------------------------------------------------------------------------------

COMMAND_WEIGHTS = {"query": 40, "feedback": 25, "relate": 15, "sync": 10, "learn": 10}


class Mixer:
    def __init__(self, db: Path, work: Path, vocab: list[str], deadline: float, seed: int):
        self.db, self.work, self.vocab, self.deadline = db, work, vocab, deadline
        self.lock = threading.Lock()
        self.queries: list[tuple[int, list[str]]] = []
        self.expected_feedback: set[tuple[int, str]] = set()
        self.times: dict[str, list[float]] = {name: [] for name in COMMAND_WEIGHTS}
        self.failures: list[str] = []
        self.seed = seed

    def worker(self, n: int) -> None:
        rng = random.Random(self.seed * 100 + n)
        names, weights = list(COMMAND_WEIGHTS), list(COMMAND_WEIGHTS.values())
        while time.monotonic() < self.deadline:
            self.step(rng, rng.choices(names, weights)[0])

    def step(self, rng: random.Random, name: str) -> None:
        with self.lock:
            known = list(self.queries)
        if name == "feedback" and not known:
            name = "query"
        if name == "query":
            args = ["query", " ".join(rng.sample(self.vocab, 2))]
        elif name == "feedback":
            qid, paths = rng.choice(known)
            path = rng.choice(paths)
            args = ["feedback", str(qid), "--helpful" if rng.random() < 0.7 else "--not-helpful", path]
        elif name == "relate":
            a, b = rng.sample(self.vocab, 2)
            args = ["relate", a, b, "-t", "related_concept", "-c", "stress", "-s", f"{rng.uniform(0.1, 1):.2f}"]
        else:
            args = [name]
        out = kb_run(*args, db=self.db, cwd=self.work)
        problem = problem_with(out) or (None if out.code == 0 else f"exit {out.code}: {out.stderr[-300:]!r}")
        with self.lock:
            self.times[name].append(out.seconds)
            if problem:
                self.failures.append(f"{' '.join(args)[:80]}: {problem}")
            elif name == "query":
                data = out.json()
                paths = [r["filepath"] for r in data["results"]]
                if paths:
                    self.queries.append((data["query_id"], paths))
            elif name == "feedback":
                self.expected_feedback.add((int(args[1]), args[3]))


def seed_queries(db: Path, kbdir: Path, words: list[str]) -> list[tuple[int, list[str]]]:
    from kb_indexer.api import KnowledgeBase

    handle = KnowledgeBase.open(db, kb=kbdir)
    try:
        outs = [handle.query(word) for word in words]
    finally:
        handle.close()
    return [(o["query_id"], [r["filepath"] for r in o["results"]]) for o in outs if o["results"]]


def run_mix(section: Section, work: Path, docs: int, procs: int, duration: float) -> None:
    db, kbdir = make_kb(work, docs)
    first = kb_run("sync", db=db, timeout=600)
    if first.code != 0:
        section.fail(f"initial sync: {first.stderr[-300:]!r}")
        return
    vocab = sorted({k for keys in expected_keywords(kbdir).values() for k in keys})[:400]
    mixer = Mixer(db, work, vocab, time.monotonic() + duration, seed=3)
    mixer.queries = seed_queries(db, kbdir, vocab[:procs])   # feedback can start at once
    mixer.deadline = time.monotonic() + duration
    threads = [threading.Thread(target=mixer.worker, args=(n,)) for n in range(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for message in mixer.failures:
        section.fail(message)
    conn = sqlite3.connect(db)
    stored = set(conn.execute("SELECT query_id, filepath FROM query_feedback").fetchall())
    conn.close()
    lost = mixer.expected_feedback - stored
    if lost:
        section.fail(f"{len(lost)} feedback rows acknowledged with exit 0 are missing, e.g. {sorted(lost)[:3]}")
    problem = integrity_problem(db)
    if problem:
        section.fail(problem)
    section.cases = sum(len(v) for v in mixer.times.values())
    for name, values in mixer.times.items():
        section.rows.append((name, len(values), percentile(values, 50), percentile(values, 95)))
    section.rows.append(("feedback rows", len(mixer.expected_feedback), "lost", len(lost)))


# -- kill -9 at random moments --------------------------------------------------------------------------------

def run_killed(args: list, db: Path, delay: float) -> bool:
    """Start ``kbindex ARGS``, SIGKILL it after ``delay`` s. True when it was still running when killed."""
    argv = kbindex_cmd() + [str(a) for a in args] + ["--db", str(db), "--format", "json"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def edit_keywords(kbdir: Path, rng: random.Random, fraction: float, tag: str) -> None:
    files = sorted(kbdir.rglob("*.keywords.json"))
    for i, path in enumerate(rng.sample(files, max(1, int(len(files) * fraction)))):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["keywords"] = data["keywords"][:-1] + [f"stress {tag} {i}"]   # the first three are "primary"
        path.write_text(json.dumps(data), encoding="utf-8")
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def sync_state_problem(db: Path, before: dict, now: dict, complete: bool) -> str | None:
    problem = integrity_problem(db)
    if problem:
        return problem
    docs = scalar(db, "SELECT COUNT(*) FROM documents")
    fts = scalar(db, "SELECT COUNT(*) FROM documents_fts")
    if docs != fts:
        return f"{docs} documents but {fts} full-text rows"
    indexed = indexed_keywords(db)
    if complete and indexed != now:
        missing = set(now) - set(indexed)
        wrong = [p for p in indexed if indexed[p] != now.get(p)]
        return f"after a full sync: {len(missing)} documents missing, {len(wrong)} with wrong keywords"
    half = [p for p, keys in indexed.items() if keys != now.get(p) and keys != before.get(p)]
    return f"{len(half)} documents with a half-applied keyword set, e.g. {half[:2]}" if half else None


def kill_sync(section: Section, work: Path, docs: int, trials: int, rng: random.Random) -> tuple[Path, Path]:
    db, kbdir = make_kb(work, docs)
    before: dict = {}
    estimate = 1.0 + docs * 0.003
    for trial in range(trials):
        if trial:
            before = expected_keywords(kbdir)
            edit_keywords(kbdir, rng, 0.1, str(trial))
        now = expected_keywords(kbdir)
        killed = run_killed(["sync"], db, rng.uniform(0.3, estimate))
        section.cases += 1
        section.rows.append(("sync", trial, "killed" if killed else "finished first"))
        problem = sync_state_problem(db, before, now, complete=not killed)
        if problem:
            section.fail(f"sync trial {trial} after kill: {problem}")
        rerun = kb_run("sync", db=db, timeout=1200)
        if rerun.code != 0:
            section.fail(f"sync trial {trial}: re-run exit {rerun.code}: {rerun.stderr[-300:]!r}")
            continue
        problem = sync_state_problem(db, before, now, complete=True)
        if problem:
            section.fail(f"sync trial {trial} after re-run: {problem}")
        estimate = max(0.8, rerun.seconds * (1.0 if trial == 0 else 1.2))
        if trial == 0:
            estimate = 1.0 + rerun.seconds * 0.15    # later trials edit a tenth of the documents
    return db, kbdir


def add_feedback(db: Path, kbdir: Path, rng: random.Random, n: int) -> None:
    from kb_indexer.api import KnowledgeBase

    handle = KnowledgeBase.open(db, kb=kbdir)
    try:
        vocab = [r[0] for r in handle.conn.execute("SELECT keyword FROM keywords ORDER BY id LIMIT 300")]
        for _ in range(n):
            out = handle.query(" ".join(rng.sample(vocab, 2)))
            paths = [r["filepath"] for r in out["results"]]
            if paths:
                handle.learning.feedback(out["query_id"], paths[:1], paths[1:2])
    finally:
        handle.close()


def learn_state_problem(db: Path, processed_before: int, complete: bool) -> str | None:
    problem = integrity_problem(db)
    if problem:
        return problem
    total = scalar(db, "SELECT COUNT(*) FROM query_feedback")
    processed = scalar(db, "SELECT COUNT(*) FROM query_feedback WHERE processed = 1")
    if complete and processed != total:
        return f"{total - processed} feedback rows left unprocessed by a completed learn"
    if processed not in (processed_before, total):
        return f"feedback half processed: {processed} of {total} (before: {processed_before})"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        unprocessed = {r[0] for r in conn.execute("SELECT id FROM query_feedback WHERE processed = 0")}
        items = conn.execute("SELECT id, feedback_ids FROM learned_items WHERE status = 'active'").fetchall()
    finally:
        conn.close()
    bad = [i for i, ids in items if set(json.loads(ids or "[]")) & unprocessed]
    return f"learned items {bad[:3]} derived from unprocessed feedback" if bad else None


def kill_learn(section: Section, db: Path, kbdir: Path, trials: int, rng: random.Random) -> None:
    estimate = 1.5
    for trial in range(trials):
        add_feedback(db, kbdir, rng, 8)
        before = scalar(db, "SELECT COUNT(*) FROM query_feedback WHERE processed = 1")
        killed = run_killed(["learn"], db, rng.uniform(0.2, estimate))
        section.cases += 1
        section.rows.append(("learn", trial, "killed" if killed else "finished first"))
        problem = learn_state_problem(db, before, complete=not killed)
        if problem:
            section.fail(f"learn trial {trial} after kill: {problem}")
        rerun = kb_run("learn", db=db, timeout=600)
        if rerun.code != 0:
            section.fail(f"learn trial {trial}: re-run exit {rerun.code}: {rerun.stderr[-300:]!r}")
            continue
        problem = learn_state_problem(db, before, complete=True)
        if problem:
            section.fail(f"learn trial {trial} after re-run: {problem}")
        estimate = max(estimate, rerun.seconds * 1.2)


def table_counts(db: Path, tables) -> dict[str, int]:
    return {t: scalar(db, f'SELECT COUNT(*) FROM "{t}"') for t in tables}


def kill_import(section: Section, db: Path, kbdir: Path, work: Path, trials: int, rng: random.Random) -> None:
    export = work / "export.json"
    out = kb_run("export", "--output", export, db=db, timeout=600)
    if out.code != 0:
        section.fail(f"export: {out.stderr[-300:]!r}")
        return
    tables = list(json.loads(export.read_text(encoding="utf-8"))["tables"])
    wanted = table_counts(db, tables)
    pristine = work / "empty.db"
    assert kb_run("init", "--kb", kbdir, db=pristine).code == 0
    empty = table_counts(pristine, tables)
    target = work / "target.db"
    estimate = None
    for trial in range(trials + 1):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        shutil.copy(pristine, target)
        if estimate is None:                      # one uninterrupted import: how long one takes
            timed = kb_run("import", export, "--force", db=target, timeout=1200)
            if timed.code != 0 or table_counts(target, tables) != wanted:
                section.fail(f"uninterrupted import: exit {timed.code} {timed.stderr[-300:]!r}")
                return
            estimate = timed.seconds
            continue
        killed = run_killed(["import", export, "--force"], target, rng.uniform(0.2, estimate))
        section.cases += 1
        section.rows.append(("import", trial - 1, "killed" if killed else "finished first"))
        problem = integrity_problem(target)
        counts = table_counts(target, tables)
        if problem or counts not in (wanted, empty):
            section.fail(f"import trial {trial - 1} after kill: {problem or 'partly imported: ' + str(counts)}")
        rerun = kb_run("import", export, "--force", db=target, timeout=1200)
        if rerun.code != 0 or table_counts(target, tables) != wanted:
            section.fail(f"import trial {trial - 1}: re-run exit {rerun.code} {rerun.stderr[-300:]!r}")


def run_kill(section: Section, work: Path, docs: int, trials: int) -> None:
    rng = random.Random(5)
    db, kbdir = kill_sync(section, work, docs, trials, rng)
    kill_learn(section, db, kbdir, trials, rng)
    kill_import(section, db, kbdir, work, trials, rng)


# -- LLM faults (bench/stress_llm.py, when present) -----------------------------------------------------------

def run_llm(section: Section, quick: bool) -> None:
    try:
        from bench import stress_llm
    except ImportError:
        section.rows.append(("bench/stress_llm.py", "absent", "skipped"))
        return
    result = stress_llm.run(quick=quick)
    section.cases = int(result.get("cases", 0))
    problems = [f"{r.get('protocol')} {r.get('fault')} {r.get('command')}: {r['problem']}"
                for r in result.get("rows", []) if isinstance(r, dict) and r.get("problem")]
    failures = result.get("failures", 0)
    count = len(failures) if isinstance(failures, list) else int(failures)
    for failure in problems or [f"llm fault {i + 1}" for i in range(count)]:
        section.fail(failure)
    section.rows.append(("cases", section.cases, "failures", len(section.failures),
                         "max seconds", result.get("max_seconds")))


# -- main -----------------------------------------------------------------------------------------------------

def failed_names(sections: list[Section]) -> list[str]:
    names = set()
    for s in sections:
        for failure in s.failures:
            names.add(f"hostile:{failure.split(':', 1)[0]}" if s.name == "hostile" else
                      f"kill:{failure.split()[0]}" if s.name == "kill" else s.name)
    return sorted(names)


def print_summary(sections: list[Section], baseline: dict) -> None:
    print(f"{'section':<10} {'cases':>7} {'failures':>9}")
    for s in sections:
        print(f"{s.name:<10} {s.cases:>7} {len(s.failures):>9}")
    for s in sections:
        if s.rows:
            print(f"\n[{s.name}]")
        for row in s.rows:
            print("  " + "  ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    print(f"\nbaseline (same run): `kbindex --version` cold start p50 {baseline['cold_p50']:.3f} s "
          f"over {baseline['runs']} runs")
    failed = failed_names(sections)
    print(f"\ncases tried: {sum(s.cases for s in sections)}; failures: "
          f"{sum(len(s.failures) for s in sections)}" + (f" ({', '.join(failed)})" if failed else ""))


def cold_start(runs: int) -> dict:
    times = [kb_run("--version", json_out=False).seconds for _ in range(runs)]
    return {"cold_p50": statistics.median(times), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI subset (seconds of mixing, 3 kill trials, 2k docs)")
    ap.add_argument("--duration", type=float, help="seconds of mixing (default 30; quick 5)")
    ap.add_argument("--procs", type=int, default=8, help="concurrent processes in the mix")
    ap.add_argument("--trials", type=int, help="kill trials per command (default 20; quick 3)")
    ap.add_argument("--docs", type=int, help="documents in the kill-trial KB (default 20000; quick 2000)")
    ap.add_argument("--mix-docs", type=int, default=300, help="documents in the mixing KB")
    ap.add_argument("--only", default="mix,kill,hostile,llm", help="comma-separated sections to run")
    ap.add_argument("--json", type=Path, help="also write the summary as JSON to this file")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    duration = args.duration if args.duration is not None else (5.0 if args.quick else 30.0)
    trials = args.trials if args.trials is not None else (3 if args.quick else 20)
    docs = args.docs if args.docs is not None else (2000 if args.quick else 20000)
    only = set(args.only.split(","))
    work = Path(tempfile.mkdtemp(prefix="kbindex-stress-"))
    sections: list[Section] = []
    try:
        baseline = cold_start(3 if args.quick else 11)
        steps = [("mix", lambda s: run_mix(s, work / "mix", args.mix_docs, args.procs, duration)),
                 ("kill", lambda s: run_kill(s, work / "kill", docs, trials)),
                 ("hostile", lambda s: run_hostile(s, work / "hostile")),
                 ("llm", lambda s: run_llm(s, args.quick))]
        for name, step in steps:
            if name in only:
                section = Section(name)
                sections.append(section)
                started = time.perf_counter()
                step(section)
                print(f"{name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    finally:
        if args.keep:
            print(f"work folder: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print_summary(sections, baseline)
    if args.json:
        args.json.write_text(json.dumps({
            "failed": failed_names(sections),
            "sections": {s.name: {"cases": s.cases, "failures": s.failures} for s in sections}}, indent=1))
    return 1 if any(s.failures for s in sections) else 0


if __name__ == "__main__":
    sys.exit(main())
