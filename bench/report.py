"""``kbindex report`` on a log of 10,000 queries, on SQLite and on PostgreSQL, in one run.

    python3 bench/report.py                   # 10,000 queries, 300 documents, both engines
    python3 bench/report.py --queries 2000 --engines sqlite

For each engine (SQLite: a fresh file; PostgreSQL: a ``pgserver`` of its own, see bench/team.py): a knowledge
base of ``--docs`` one-paragraph notes, ``kbindex init`` + ``sync``, then ``--queries`` recorded questions
filled in with direct SQL in one transaction: 50 planted questions that found nothing (one attempt, no
results), 50 planted questions asked twice whose results were marked not helpful, and the rest asked once
(unmarked) or twice (one result marked helpful); every attempt's ``top_results`` names documents of the first
90% only, so the last 10% are planted never-returned documents. Then this checkout's
``kbindex report --format json --limit 100`` (a process of its own: the real path, connection set-up
included), timed (median of ``--runs``), and checked: every planted question and document is found, and
nothing else. Target: under 2 s on both engines.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.stress_common import kb_run  # noqa: E402
from bench.team import Servers, must  # noqa: E402

PLANTED = 50


def write_kb(folder: Path, docs: int) -> list[str]:
    folder.mkdir(parents=True)
    paths = [f"note-{i:04d}.md" for i in range(docs)]
    for i, path in enumerate(paths):
        (folder / path).write_text(f"# Note {i}\n\nTopic {i % 37} and subject {i % 11}.\n", encoding="utf-8")
    return paths


def _top(paths: list[str]) -> str:
    return json.dumps([{"filepath": p, "score": 1.0, "matched_keywords": [], "sources": []} for p in paths])


def fill(target: str, queries: int, paths: list[str]) -> dict[str, set[str]]:
    """The log (module docstring) written into the index at ``target``; returns what was planted."""
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.store.connection import transaction

    rng = random.Random(7)
    returned = paths[:int(len(paths) * 0.9)]
    planted = {"zero_results": {f"planted nothing {i}" for i in range(PLANTED)},
               "never_helpful": {f"planted unhelped {i}" for i in range(PLANTED)},
               "never_returned": set(paths[len(returned):])}
    questions = [(q, 1, False) for q in sorted(planted["zero_results"])]
    questions += [(q, 2, False) for q in sorted(planted["never_helpful"])]
    questions += [(f"filler question {i}", 1 + i % 2, True) for i in range(queries - len(questions))]
    with KnowledgeBase.open(target) as kb, transaction(kb.conn):
        when = lambda i: f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"  # noqa: E731
        kb.conn.executemany("INSERT INTO queries (question, context, created_at, last_attempted_at) "
                            "VALUES (?, '', ?, ?)", [(q, when(i), when(i)) for i, (q, _, _) in enumerate(questions)])
        ids = dict(kb.conn.execute("SELECT question, id FROM queries").fetchall())
        attempts, marks = [], []
        for i, (q, times, filler) in enumerate(questions):
            top = [] if q in planted["zero_results"] else rng.sample(returned, 3)
            attempts += [(ids[q], len(top), _top(top), when(i))] * times
            if times == 2:
                marks.append((ids[q], top[0], 1 if filler else 0, when(i)))
        kb.conn.executemany("INSERT INTO query_attempts (query_id, keywords, expand_depth, threshold, method, "
                            "result_count, top_results, expansions, options, created_at) "
                            "VALUES (?, '[]', 1, 0.0, 'keyword', ?, ?, '[]', '{}', ?)", attempts)
        kb.conn.executemany("INSERT INTO query_feedback (query_id, filepath, helpful, created_at) "
                            "VALUES (?, ?, ?, ?)", marks)
    return planted


def check(out: dict, planted: dict[str, set[str]]) -> list[str]:
    problems = []
    for name in ("zero_results", "never_helpful"):
        found = {i["question"] for i in out[name]["items"]}
        if found != planted[name] or out[name]["count"] != PLANTED:
            problems.append(f"{name}: {out[name]['count']} found, {len(planted[name] - found)} planted missed")
    never = set(out["never_returned"]["items"])
    if never != planted["never_returned"]:
        problems.append(f"never_returned: {len(planted['never_returned'] - never)} planted missed")
    return problems


def run_engine(engine: str, servers: Servers | None, work: Path, args: argparse.Namespace) -> dict:
    target = servers.target(engine, "report") if servers else str(work / "report.db")
    paths = write_kb(work / f"kb-{engine}", args.docs)
    must(kb_run("init", "--db", target, "--kb", work / f"kb-{engine}"), "init")
    must(kb_run("sync", "--db", target, "--kb", work / f"kb-{engine}"), "sync")
    start = time.perf_counter()
    planted = fill(target, args.queries, paths)
    filled = time.perf_counter() - start
    times, out = [], {}
    for _ in range(args.runs):
        res = kb_run("report", "--limit", "100", "--db", target)
        out = must(res, "report")
        times.append(res.seconds)
    return {"engine": engine, "queries": args.queries, "fill_s": round(filled, 2),
            "report_s": round(statistics.median(times), 3), "problems": check(out, planted)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", default="sqlite,postgres")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kbreport-") as tmp:
        work = Path(tmp)
        engines = args.engines.split(",")
        servers = Servers(work) if "postgres" in engines else None
        try:
            for engine in engines:
                rows.append(run_engine(engine, servers if engine == "postgres" else None, work, args))
        finally:
            if servers:
                servers.close()
    print("| engine | queries | report s (median) | planted found |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['engine']} | {r['queries']:,} | {r['report_s']:.2f} | "
              f"{'all' if not r['problems'] else '; '.join(r['problems'])} |")
    failed = any(r["problems"] or r["report_s"] >= 2.0 for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
