"""A team on one shared index: the same workload on PostgreSQL and on SQLite, in one run, side by side.

    python3 bench/team.py                     # full: quality, 16 processes for 60 s on 20k documents, cold query
    python3 bench/team.py --quick             # smoke: 2k documents, 15 s, 40 questions per collection
    python3 bench/team.py --only quality,mix,cold --docs 20000 --seconds 60 --procs 16

It starts its own PostgreSQL server (the ``pgserver`` wheel of the dev extra: PostgreSQL 16 with pgvector, in a
temporary folder, on a Unix socket) and gives each section a fresh database; the SQLite side gets a fresh file.

Sections
- quality: a collection written as a knowledge base, ``kbindex init`` + ``sync``, then every question through
  this checkout's ``kbindex query --format json`` (one process per question, as an agent calls it) on both
  engines: nDCG@10 and p50 wall time. Collections: Cranfield (../shared/data/cranfield, the one the full-text
  parameters were tuned on) and the 862-skill catalog of ../shared/data/skills as documents (name + description)
  with its labelled dev messages as questions (never used for full-text tuning). Target: PostgreSQL ≥ 0.97× SQLite.
- mix: a synthetic knowledge base (bench/synth_kb.py) synced once, then ``--procs`` processes for ``--seconds``:
  12 agents (long-lived processes using the Python API, as an MCP server does: ``query`` then ``feedback`` on one
  of its results), 2 doing ``relate``/``unrelate`` on keyword pairs of their own, 1 editing 1% of the documents
  and running ``kbindex sync``, 1 running ``kbindex learn`` in a loop (CLI processes). Reports operations/s,
  query p50/p95 (in the agent process), query CPU (the agent's, and on PostgreSQL its server process's, read
  from /proc: the server runs here), failures (exceptions, non-zero exits, "database is locked") and lost
  writes: every feedback mark an agent was told was recorded must be stored, and every pair a relate worker
  touched must end as it last left it. Targets: 0 failures, 0 lost writes, query p95 ≤ 300 ms on PostgreSQL.
- cold: median wall time of a cold ``kbindex query`` (a new process each time, connection set-up included) on
  the mix's knowledge base, on both engines, beside ``python -c pass``.

The machine matters: on 2 cores, 16 processes share 2 CPUs, and every figure is printed beside the SQLite run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.data import data_dir  # noqa: E402 (after the path is set)

from bench.cranfield import load as load_cranfield, ndcg_at  # noqa: E402
from bench.stress_common import kb_run, kbindex_cmd, percentile  # noqa: E402

SKILLS = data_dir("skills")
ENGINES = ("sqlite", "postgres")


# -- the PostgreSQL server and a fresh index per section --------------------------------------------------------

class Servers:
    """A pgserver PostgreSQL in ``work`` and fresh targets (an SQLite path or a PostgreSQL URL) per name."""

    def __init__(self, work: Path):
        import pgserver  # the dev extra's PostgreSQL 16 (+ pgvector)

        self.work = work
        self.server = pgserver.get_server(str(work / "pg"), cleanup_mode="stop")
        self.admin = self.server.get_uri()

    def target(self, engine: str, name: str) -> str:
        if engine == "sqlite":
            return str(self.work / f"{name}.db")
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        base, _, query = self.admin.partition("?")
        return base.rsplit("/", 1)[0] + "/" + name + ("?" + query if query else "")

    def close(self) -> None:
        self.server.cleanup()


def must(out: Any, what: str) -> Any:
    if out.code != 0:
        raise SystemExit(f"{what} failed (exit {out.code}): {out.stderr.decode(errors='replace')[-800:]}")
    return out.json()


# -- quality ----------------------------------------------------------------------------------------------------

def cranfield_collection(limit: int | None) -> tuple[dict[str, str], list[tuple[str, dict[str, int]]]]:
    corpus, queries, qrels = load_cranfield()
    docs = {f"{d['_id']}.md": f"# {' '.join(d.get('title', '').split()) or 'Document ' + d['_id']}\n\n"
            f"{d.get('text', '')}\n" for d in corpus}
    questions = [(q["text"], {f"{k}.md": v for k, v in qrels[q["_id"]].items()}) for q in queries]
    return docs, questions[:limit] if limit else questions


def skills_collection(limit: int | None) -> tuple[dict[str, str], list[tuple[str, dict[str, int]]]]:
    catalog = [json.loads(line) for line in (SKILLS / "catalog.jsonl").open(encoding="utf-8")]
    docs = {f"{s['name']}.md": f"# {s['name']}\n\n{s['description']}\n" for s in catalog}
    questions = []
    for line in (SKILLS / "queries_dev.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        rel = {f"{name}.md": 1 for name in q.get("relevant") or [] if f"{name}.md" in docs}
        if rel:
            questions.append((q["query"], rel))
    return docs, questions[:limit] if limit else questions


def quality_run(servers: Servers, engine: str, name: str, docs: dict[str, str],
                questions: list[tuple[str, dict[str, int]]]) -> dict[str, float]:
    root = servers.work / f"{name}-{engine}" / "knowledge-base"
    root.mkdir(parents=True)
    for rel, text in docs.items():
        (root / rel).write_text(text, encoding="utf-8")
    db = servers.target(engine, f"{name}_{engine}")
    must(kb_run("init", "--kb", root, db=db), f"init {name} on {engine}")
    t0 = time.perf_counter()
    must(kb_run("sync", db=db, timeout=1800), f"sync {name} on {engine}")
    sync_s = time.perf_counter() - t0
    scores, times = [], []
    for text, rels in questions:
        out = kb_run("query", text, "--limit", "10", db=db, timeout=120)
        times.append(out.seconds)
        ranked = [r["filepath"] for r in must(out, f"query on {engine}")["results"]]
        scores.append(ndcg_at(ranked, rels))
    return {"ndcg": statistics.mean(scores), "p50": percentile(times, 50), "sync_s": sync_s}


def section_quality(servers: Servers, limit: int | None) -> list[str]:
    lines = ["quality (through the CLI)      | SQLite nDCG@10 | PostgreSQL nDCG@10 | ratio | p50 SQLite / PG"]
    for name, make in (("cranfield", cranfield_collection), ("skills", skills_collection)):
        docs, questions = make(limit)
        got = {e: quality_run(servers, e, name, docs, questions) for e in ENGINES}
        s, p = got["sqlite"], got["postgres"]
        ratio = p["ndcg"] / s["ndcg"] if s["ndcg"] else float("nan")
        lines.append(f"{name:<12} ({len(docs):>5} docs, {len(questions):>3} q) | {s['ndcg']:.4f}         | "
                     f"{p['ndcg']:.4f}             | {ratio:.3f} | {s['p50'] * 1000:.0f} / {p['p50'] * 1000:.0f} ms"
                     f" (sync {s['sync_s']:.1f} / {p['sync_s']:.1f} s)")
    return lines


# -- the mix: workers ------------------------------------------------------------------------------------------

def worker(role: str, db: str, kb: str, seconds: float, out: str, seed: int, vocab_file: str) -> None:
    """One process of the mix; writes what it did (timings, acknowledged writes, failures) to ``out``."""
    rng = random.Random(seed)
    vocab = json.loads(Path(vocab_file).read_text(encoding="utf-8"))
    log: dict[str, Any] = {"role": role, "times": {}, "failures": [], "feedback": [], "relations": {}}
    deadline = time.monotonic() + seconds
    run = {"agent": agent_loop, "relate": relate_loop, "sync": sync_loop, "learn": learn_loop}[role]
    try:
        run(db, kb, deadline, rng, vocab, log, seed)
    except Exception as exc:  # a worker that dies is a failure, reported with its cause
        log["failures"].append(f"{role} died: {type(exc).__name__}: {exc}")
    Path(out).write_text(json.dumps(log), encoding="utf-8")


def _timed(log: dict[str, Any], name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    t0, start = time.perf_counter(), time.time()
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        log["failures"].append(f"{name}: {type(exc).__name__}: {exc}")
        return None
    finally:
        _span(log, name, start, time.perf_counter() - t0)


def _span(log: dict[str, Any], name: str, start: float, seconds: float) -> None:
    """One operation's duration, and when it ran (wall clock: the workers are separate processes)."""
    log["times"].setdefault(name, []).append(seconds)
    log.setdefault("spans", []).append([name, start, seconds])


def _server_cpu(handle: Any) -> Any:
    """A function giving the CPU seconds the PostgreSQL server process of ``handle``'s connection has used (the
    benchmark's server runs on this machine: /proc), or 0.0 on SQLite (the agent's own process does all)."""
    raw = getattr(handle.conn, "raw", None)
    if raw is None:
        return lambda: 0.0
    stat = Path(f"/proc/{raw.execute('SELECT pg_backend_pid()').fetchone()[0]}/stat")
    tick = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick   # utime + stime

    return used


def agent_loop(db: str, kb: str, deadline: float, rng: random.Random, vocab: list[str], log: dict[str, Any],
               seed: int) -> None:
    from kb_indexer.api import KnowledgeBase, QueryOptions

    handle = KnowledgeBase.open(db, kb=kb)
    options = QueryOptions(limit=10)
    server = _server_cpu(handle)
    while time.monotonic() < deadline:
        question = " ".join(rng.sample(vocab, 2))
        cpu, served = time.process_time(), server()
        res = _timed(log, "query", handle.query, question, options=options)
        log.setdefault("query_cpu", []).append([time.process_time() - cpu, server() - served])
        if not res or not res["results"]:
            continue
        path = rng.choice(res["results"])["filepath"]
        if _timed(log, "feedback", handle.learning.feedback, res["query_id"], helpful=[path]) is not None:
            log["feedback"].append([res["query_id"], path])
    handle.close()


def relate_loop(db: str, kb: str, deadline: float, rng: random.Random, vocab: list[str], log: dict[str, Any],
                seed: int) -> None:
    from kb_indexer.api import KnowledgeBase

    handle = KnowledgeBase.open(db, kb=kb)
    mine = vocab[seed % 2::2][:60]       # two relate workers never touch the same pair
    while time.monotonic() < deadline:
        present = [pair for pair, there in log["relations"].items() if there]
        if present and rng.random() < 0.4:    # unrelate a pair this worker related (never an absent one)
            pair = rng.choice(present)
            if _timed(log, "unrelate", handle.unrelate, *pair.split("\t"), "related_concept") is not None:
                log["relations"][pair] = False
            continue
        a, b = sorted(rng.sample(mine, 2))
        if _timed(log, "relate", handle.relate, a, b, "related_concept", "team bench", 0.6) is not None:
            log["relations"][f"{a}\t{b}"] = True
    handle.close()


def _cli(log: dict[str, Any], name: str, *args: Any, db: str) -> None:
    start = time.time()
    out = kb_run(*args, db=db, timeout=900)
    _span(log, name, start, out.seconds)
    if out.code != 0:
        log["failures"].append(f"{name} exit {out.code}: {out.stderr.decode(errors='replace')[-300:]}")


def sync_loop(db: str, kb: str, deadline: float, rng: random.Random, vocab: list[str], log: dict[str, Any],
              seed: int) -> None:
    files = sorted(Path(kb).rglob("*.md"))
    round_no = 0
    while time.monotonic() < deadline:
        round_no += 1
        for path in rng.sample(files, max(1, len(files) // 100)):
            with path.open("a", encoding="utf-8") as f:
                f.write(f"\nEdited in round {round_no}: {rng.choice(vocab)}.\n")
        _cli(log, "sync", "sync", db=db)


def learn_loop(db: str, kb: str, deadline: float, rng: random.Random, vocab: list[str], log: dict[str, Any],
               seed: int) -> None:
    while time.monotonic() < deadline:
        _cli(log, "learn", "learn", db=db)
        time.sleep(1.0)


# -- the mix: orchestration ------------------------------------------------------------------------------------

def roles(procs: int) -> list[str]:
    """16 → 12 agents, 2 relate, 1 sync, 1 learn; fewer processes keep that shape."""
    fixed = ["relate", "relate", "sync", "learn"] if procs >= 8 else ["relate", "sync", "learn"]
    return ["agent"] * max(1, procs - len(fixed)) + fixed


def mix_run(servers: Servers, engine: str, kb: Path, vocab_file: Path, seconds: float, procs: int) -> dict:
    db = servers.target(engine, f"mix_{engine}")
    must(kb_run("init", "--kb", kb, db=db), f"init mix on {engine}")
    first = kb_run("sync", db=db, timeout=3600)
    must(first, f"first sync on {engine}")
    logs_dir = servers.work / f"logs-{engine}"
    logs_dir.mkdir()
    children = []
    t0 = time.perf_counter()
    for n, role in enumerate(roles(procs)):
        out = logs_dir / f"{n}-{role}.json"
        argv = [sys.executable, __file__, "--worker", role, "--db", db, "--kb", str(kb), "--seconds", str(seconds),
                "--out", str(out), "--seed", str(n), "--vocab", str(vocab_file)]
        children.append((subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), out))
    failures: list[str] = []
    for child, out in children:
        _, err = child.communicate(timeout=seconds + 1800)
        if child.returncode != 0 or not out.exists():
            failures.append(f"worker exit {child.returncode}: {err.decode(errors='replace')[-300:]}")
    wall = time.perf_counter() - t0
    logs = [json.loads(out.read_text(encoding="utf-8")) for _, out in children if out.exists()]
    return {**summarise(db, kb, logs, failures, wall), "first_sync": first.seconds}


def summarise(db: str, kb: Path, logs: list[dict], failures: list[str], wall: float) -> dict:
    from kb_indexer.api import KnowledgeBase

    times: dict[str, list[float]] = {}
    acked, relations = set(), {}
    cpu: list[list[float]] = []
    for log in logs:
        failures += log["failures"]
        cpu += log.get("query_cpu", [])
        for name, values in log["times"].items():
            times.setdefault(name, []).extend(values)
        acked |= {(int(q), p) for q, p in log["feedback"]}
        relations.update(log["relations"])
    handle = KnowledgeBase.open(db, kb=kb)
    try:
        stored = {(int(r[0]), r[1]) for r in handle.conn.execute("SELECT query_id, filepath FROM query_feedback")}
        present = {(r[0], r[1]) for r in handle.conn.execute(
            "SELECT a.keyword, b.keyword FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 "
            "JOIN keywords b ON b.id = s.keyword_id_2 WHERE s.similarity_type = 'related_concept'")}
    finally:
        handle.close()
    wrong = [pair for pair, want in relations.items()
             if (tuple(pair.split("\t")) in present or tuple(reversed(pair.split("\t"))) in present) != want]
    ops = sum(len(v) for v in times.values())
    return {"ops_per_s": ops / wall, "times": times, "overlap": overlap([sp for log in logs for sp in log.get("spans", [])]), "failures": failures, "lost_feedback": len(acked - stored),
            "query_cpu": [statistics.mean(c[0] for c in cpu), statistics.mean(c[1] for c in cpu)] if cpu else [0, 0],
            "feedback": len(acked), "relations": len(relations), "wrong_relations": len(wrong)}


def overlap(spans: list[list[Any]]) -> dict[str, list[float]]:
    """The query times split by what else ran meanwhile: a ``sync``, a ``learn``, both, or neither (where the
    tail comes from)."""
    busy = {name: [(s, s + d) for n, s, d in spans if n == name] for name in ("sync", "learn")}
    out: dict[str, list[float]] = {}
    for name, start, seconds in spans:
        if name != "query":
            continue
        during = [k for k, runs in busy.items() if any(a < start + seconds and start < b for a, b in runs)]
        out.setdefault(" + ".join(during) or "neither", []).append(seconds)
    return out


def vocabulary(kb: Path, n: int = 400) -> list[str]:
    words: set[str] = set()
    for path in sorted(kb.rglob("*.keywords.json"))[:2000]:
        words.update(json.loads(path.read_text(encoding="utf-8"))["keywords"])
    return sorted(words)[:n]


def section_mix(servers: Servers, docs: int, seconds: float, procs: int) -> tuple[list[str], Path]:
    from bench.synth_kb import generate

    got = {}
    for engine in ENGINES:
        base = servers.work / f"mix-kb-{engine}"
        generate(base, docs=docs, seed=23)
        kb = base / "knowledge-base"
        vocab_file = servers.work / "vocab.json"
        vocab_file.write_text(json.dumps(vocabulary(kb)), encoding="utf-8")
        got[engine] = mix_run(servers, engine, kb, vocab_file, seconds, procs)
    lines = [f"mix ({procs} processes, {seconds:.0f} s, {docs} documents) | SQLite | PostgreSQL"]
    s, p = got["sqlite"], got["postgres"]
    lines.append(f"first sync (alone)                | {s['first_sync']:.1f} s | {p['first_sync']:.1f} s "
                 f"({p['first_sync'] / s['first_sync']:.1f}×)")
    lines.append(f"operations/s                      | {s['ops_per_s']:.1f} | {p['ops_per_s']:.1f}")
    for name in ("query", "feedback", "relate", "unrelate", "sync", "learn"):
        lines.append(f"{name:<33} | {_times(s['times'].get(name, []))} | {_times(p['times'].get(name, []))}")
    for during in ("neither", "sync", "learn", "sync + learn"):
        lines.append(f"  query while {during:<21} | {_times(s['overlap'].get(during, []))} | "
                     f"{_times(p['overlap'].get(during, []))}")
    lines.append("query CPU, mean (agent + server)  | " + " | ".join(
        f"{r['query_cpu'][0] * 1000:.1f} + {r['query_cpu'][1] * 1000:.1f} ms" for r in (s, p)))
    lines.append(f"failures (target 0)               | {len(s['failures'])} | {len(p['failures'])}")
    lines.append(f"lost feedback of acknowledged     | {s['lost_feedback']}/{s['feedback']} | "
                 f"{p['lost_feedback']}/{p['feedback']}")
    lines.append(f"relations not as last left        | {s['wrong_relations']}/{s['relations']} | "
                 f"{p['wrong_relations']}/{p['relations']}")
    for engine in ENGINES:
        for message in got[engine]["failures"][:5]:
            lines.append(f"  {engine} failure: {message[:200]}")
    return lines, servers.work / "mix-kb-sqlite" / "knowledge-base"


def _times(v: list[float]) -> str:
    return f"n={len(v)} p50 {percentile(v, 50) * 1000:.0f} ms p95 {percentile(v, 95) * 1000:.0f} ms" if v else "n=0"


# -- cold ------------------------------------------------------------------------------------------------------

def section_cold(servers: Servers, runs: int) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBINDEX_")}

    def wall(argv: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=False)
        return time.perf_counter() - t0

    base = statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(runs))
    lines = [f"cold `kbindex query` (median of {runs}, python -c pass {base * 1000:.0f} ms) | SQLite | PostgreSQL"]
    cells = []
    for engine in ENGINES:
        db = _mix_target(servers, engine)
        argv = kbindex_cmd() + ["query", "turbine blade cooling", "--db", db, "--format", "json"]
        t = statistics.median(wall(argv) for _ in range(runs))
        cells.append(f"{t * 1000:.0f} ms ({t / base:.1f}×)")
    lines.append(f"{'':<50} | {cells[0]} | {cells[1]}")
    return lines


def _mix_target(servers: Servers, engine: str) -> str:
    """The mix's index (not recreated)."""
    if engine == "sqlite":
        return str(servers.work / "mix_sqlite.db")
    base, _, query = servers.admin.partition("?")
    return base.rsplit("/", 1)[0] + "/mix_postgres" + ("?" + query if query else "")


# -- main ------------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="quality,mix,cold")
    ap.add_argument("--docs", type=int)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--procs", type=int, default=16)
    ap.add_argument("--questions", type=int, help="questions per collection (default: all; --quick: 40)")
    ap.add_argument("--cold-runs", type=int, default=7)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--db", "--kb", "--out", "--vocab"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.db, args.kb, args.seconds, args.out, args.seed, args.vocab)
        return 0
    docs = args.docs or (2000 if args.quick else 20000)
    seconds = args.seconds or (15.0 if args.quick else 60.0)
    questions = args.questions or (40 if args.quick else None)
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="kbindex-team-") as tmp:
        servers = Servers(Path(tmp))
        try:
            lines: list[str] = []
            if "quality" in only:
                lines += section_quality(servers, questions) + [""]
            if "mix" in only or "cold" in only:
                mix_lines, _ = section_mix(servers, docs, seconds, args.procs)
                lines += (mix_lines + [""]) if "mix" in only else []
            if "cold" in only:
                lines += section_cold(servers, args.cold_runs)
            print("\n".join(lines))
        finally:
            servers.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
