"""Query history at scale: wall time and peak RSS of the commands users run on an index of N recorded queries.

    python bench/history_scale.py --queries 1000,1000000 --baseline-src /work/base
    python bench/history_scale.py --queries 1000,100000 --pg --baseline-src /work/base

For each N (and each engine: SQLite, and with ``--pg`` PostgreSQL on a pgserver of its own), for this checkout
and, with ``--baseline-src``, an older checkout (``PYTHONPATH=<src> python -m kb_indexer``): ``kbindex init``
by that checkout, then N queries filled in with direct SQL in one transaction (each with one attempt holding
three results; every second one with a feedback mark), then, each a process of its own, timed (wall) with its
peak RSS (``os.wait4``):

- ``history`` (the last 10) and ``history --limit 0 --format json`` (stdout to /dev/null);
- ``export --output F``;
- ``import F --force`` into a fresh index (initialised by the same checkout);
- ``clear-history --before DATE`` (DATE: half the queries were last asked before it).

A command still running after ``--timeout`` seconds is stopped and shown as such (its RSS: the peak so far).

The JSON results of ``export`` and ``clear-history`` (row counts, queries and feedback removed) are checked to be
the same for both checkouts. Prints a markdown table; ``--json F`` also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
START = datetime(2024, 1, 1)


def _when(i: int) -> str:
    return (START + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S")


def _rows(n: int) -> Iterator[tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...] | None]]:
    """(query, attempt, feedback or None) of query ``i``, for i in 1..n."""
    for i in range(1, n + 1):
        t = _when(i)
        topic = f"topic {i % 997}"
        top = json.dumps([{"filepath": f"notes/doc-{(i + k) % 50}.md", "score": round(0.9 - k * 0.1, 3),
                           "matched_keywords": [topic], "sources": ["keyword"]} for k in range(3)])
        yield ((i, f"question {i} about {topic}?", "", t, t),
               (i, i, json.dumps([topic, "question"]), 1, 0.7, "keyword", 3, top, "[]", '{"limit": 10}', t),
               (i // 2, i, i, f"notes/doc-{i % 50}.md", 1, None, 0, t) if i % 2 == 0 else None)


_Q = "queries (id, question, context, created_at, last_attempted_at)"
_A = ("query_attempts (id, query_id, keywords, expand_depth, threshold, method, result_count, top_results, "
      "expansions, options, created_at)")
_F = "query_feedback (id, query_id, attempt_id, filepath, helpful, notes, processed, created_at)"


def fill_sqlite(path: str, n: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for q, a, f in _rows(n):
        conn.execute(f"INSERT INTO {_Q} VALUES (?, ?, ?, ?, ?)", q)
        conn.execute(f"INSERT INTO {_A} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", a)
        if f is not None:
            conn.execute(f"INSERT INTO {_F} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", f)
    conn.execute("COMMIT")
    conn.close()


def fill_pg(url: str, n: int) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        for table, pick in ((_Q, 0), (_A, 1), (_F, 2)):
            with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
                for rows in _rows(n):
                    if rows[pick] is not None:
                        copy.write_row(rows[pick])
        for table in ("queries", "query_attempts", "query_feedback"):
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                         f"COALESCE((SELECT max(id) FROM {table}), 0) + 1, false)")


class Targets:
    """Fresh index targets: SQLite files in ``work``, or databases of a pgserver started there."""

    def __init__(self, work: Path, pg: bool):
        self.work, self.admin = work, None
        if pg:
            import pgserver  # the dev extra's PostgreSQL 16

            self.server = pgserver.get_server(str(work / "pg"), cleanup_mode="stop")
            self.admin = self.server.get_uri()

    def new(self, engine: str, name: str) -> str:
        if engine == "sqlite":
            path = self.work / f"{name}.db"
            for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                p.unlink(missing_ok=True)
            return str(path)
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.admin.replace("/postgres?", f"/{name}?")


TIMEOUT = [600.0]   # seconds a command may run before it is stopped (--timeout)


def run(src: Path, env: dict[str, str], args: list[str], keep: bool = True) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout or "" unless ``keep``) of ``python -m kb_indexer ARGS`` run from
    checkout ``src`` (its output in files, so that the process is reaped here with its resource usage). A
    command stopped at the time limit: (inf, its peak RSS so far, "")."""
    home = Path(env["HOME"])
    with open(home / "out.txt" if keep else os.devnull, "w") as out, open(home / "err.txt", "w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "kb_indexer", *args], cwd=home, stdout=out, stderr=err,
                                env={**env, "PYTHONPATH": str(src)})
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > TIMEOUT[0]:
                proc.kill()
                _, _, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                print(f"{src}: kbindex {args[0]} stopped after {TIMEOUT[0]:.0f} s", file=sys.stderr, flush=True)
                return float("inf"), usage.ru_maxrss / 1024, ""
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{src}: kbindex {' '.join(args)} failed ({proc.returncode}): "
                         f"{(home / 'err.txt').read_text()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, (home / "out.txt").read_text() if keep else ""


def measure(src: Path, engine: str, n: int, targets: Targets, env: dict[str, str], tag: str) -> dict[str, Any]:
    kb = Path(env["HOME"]) / "kb"
    kb.mkdir(exist_ok=True)
    db = targets.new(engine, f"hist_{tag}_{n}")
    run(src, env, ["init", "--db", db, "--kb", str(kb), "--format", "json"])
    t0 = time.perf_counter()
    (fill_sqlite if engine == "sqlite" else fill_pg)(db, n)
    fill = time.perf_counter() - t0
    out: dict[str, Any] = {"fill_s": round(fill, 1)}
    common = ["--db", db, "--kb", str(kb)]
    out["history"] = run(src, env, ["history", *common, "--format", "json"], keep=False)[:2]
    out["history --limit 0 --format json"] = run(src, env, ["history", "--limit", "0", *common, "--format", "json"],
                                                 keep=False)[:2]
    export = Path(env["HOME"]) / f"export_{tag}_{n}.json"
    wall, rss, text = run(src, env, ["export", "--output", str(export), *common, "--format", "json"])
    out["export --output"] = (wall, rss)
    out["export_result"] = json.loads(text)["tables"]
    out["export_mb"] = round(export.stat().st_size / 1e6, 1)
    copy = targets.new(engine, f"hist_{tag}_{n}_import")
    run(src, env, ["init", "--db", copy, "--kb", str(kb), "--format", "json"])
    wall, rss, text = run(src, env, ["import", str(export), "--force", "--db", copy, "--kb", str(kb),
                                     "--format", "json"])
    out["import"] = (wall, rss)
    out["import_result"] = json.loads(text) if text else None
    export.unlink()
    wall, rss, text = run(src, env, ["clear-history", "--before", _when(n // 2 + 1), *common, "--format", "json"])
    out["clear-history --before"] = (wall, rss)
    out["clear_result"] = json.loads(text) if text else None
    return out


COMMANDS = ("history", "history --limit 0 --format json", "export --output", "import", "clear-history --before")


def _seconds(wall: float) -> str:
    return f"> {TIMEOUT[0]:.0f} (stopped)" if wall == float("inf") else f"{wall:.2f}" if wall < 10 else f"{wall:.1f}"


def table(results: list[dict[str, Any]], baseline: bool) -> str:
    head = "| engine | queries | command | " + ("baseline s | baseline MB | " if baseline else "") + "s | MB |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        for cmd in COMMANDS:
            base = r.get("base")
            cells = [r["engine"], f"{r['n']:,}", f"`{cmd}`"]
            if baseline:
                cells += [_seconds(base[cmd][0]), f"{base[cmd][1]:,.0f}"] if base else ["", ""]
            cells += [_seconds(r["new"][cmd][0]), f"{r['new'][cmd][1]:,.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", default="1000,100000", help="comma-separated numbers of recorded queries")
    ap.add_argument("--pg", action="store_true", help="PostgreSQL (pgserver) instead of SQLite")
    ap.add_argument("--baseline-src", type=Path, help="an older checkout to measure beside this one")
    ap.add_argument("--baseline-max", type=int, default=0, help="measure the baseline only up to this N (0: all)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--timeout", type=float, default=600, help="stop a command after this many seconds")
    args = ap.parse_args()
    TIMEOUT[0] = args.timeout
    sizes = [int(x.replace("_", "")) for x in args.queries.split(",")]
    engine = "postgres" if args.pg else "sqlite"
    work = Path(tempfile.mkdtemp(prefix="kb-histscale-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBINDEX_")}
    env["HOME"] = str(work / "home")
    Path(env["HOME"]).mkdir()
    results = []
    targets = Targets(work, args.pg)
    try:
        for n in sizes:
            row: dict[str, Any] = {"engine": engine, "n": n, "new": measure(REPO, engine, n, targets, env, "new")}
            if args.baseline_src and (not args.baseline_max or n <= args.baseline_max):
                row["base"] = measure(args.baseline_src.resolve(), engine, n, targets, env, "base")
                for key in ("export_result", "clear_result", "import_result"):
                    if None not in (row["base"][key], row["new"][key]) and row["base"][key] != row["new"][key]:
                        raise SystemExit(f"{key} differs at N={n}: baseline {row['base'][key]}, "
                                         f"this checkout {row['new'][key]}")
            print(json.dumps(row), file=sys.stderr, flush=True)
            results.append(row)
    finally:
        if targets.admin:
            targets.server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    print(table(results, bool(args.baseline_src)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
