"""Round trips to the server and in-process time per command on PostgreSQL, beside SQLite's time.

    python3 bench/pg_roundtrips.py                  # 2,000 documents, 40 questions
    python3 bench/pg_roundtrips.py --docs 5000 --questions 60

On a server every statement is a round trip; on a loaded machine each also waits for the server process to be
scheduled, so the count is what a change to the PostgreSQL engine can cut, and, unlike a time, it does not
depend on what else the machine runs. It counts every statement psycopg sends (``execute``, ``executemany``,
``COPY``; the statements of one ``PgConnection.pipelined()`` block, sent together, count once) while this checkout runs, in this process, the code a user runs: ``KnowledgeBase.open``, ``query`` of
new questions and ``feedback`` (the Python API, as an agent or the MCP server calls it), and the CLI's ``sync``
(first, then after editing 1% of the documents) and ``learn``. The knowledge base is bench/synth_kb.py's. It
starts its own PostgreSQL (pgserver, the dev extra); the SQLite side gets a fresh file. Times are wall times in
this process (median for queries), SQLite's from the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

COUNT = [0]          # round trips: statements, less those sent in a pipeline, plus one per pipeline
_IN_PIPELINE = [False]


def count_round_trips() -> None:
    """Count every statement psycopg's cursors send (``Connection.execute`` goes through them); the statements
    of one ``PgConnection.pipelined()`` block (sent together, one wait) count as one round trip."""
    from contextlib import contextmanager

    from psycopg import Cursor

    from kb_indexer.store.pg.connection import PgConnection

    for name in ("execute", "executemany", "copy"):
        original = getattr(Cursor, name)

        def counted(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            COUNT[0] += 0 if _IN_PIPELINE[0] else 1
            return _original(self, *args, **kwargs)

        setattr(Cursor, name, counted)
    pipelined = getattr(PgConnection, "pipelined", None)
    if pipelined is not None:   # (an older checkout has none)
        @contextmanager
        def one_trip(self: Any) -> Any:
            COUNT[0] += 1
            _IN_PIPELINE[0] = True
            try:
                with pipelined(self):
                    yield
            finally:
                _IN_PIPELINE[0] = False

        setattr(PgConnection, "pipelined", one_trip)


def measured(fn: Callable[[], Any]) -> tuple[Any, int, float]:
    before, t0 = COUNT[0], time.perf_counter()
    out = fn()
    return out, COUNT[0] - before, time.perf_counter() - t0


def cli(*args: str) -> None:
    from kb_indexer.cli import main

    sys.argv = ["kbindex", *args, "--format", "json"]
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # the command's JSON: only the table is printed
            main()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"kbindex {' '.join(args)} exited {exc.code}") from None


def run(db: str, kb: Path, vocab: list[str], questions: int, docs: int) -> dict[str, Any]:
    from kb_indexer.api import KnowledgeBase, QueryOptions

    got: dict[str, Any] = {}
    cli("init", "--kb", str(kb), "--db", db)
    _, got["sync_n"], got["sync_s"] = measured(lambda: cli("sync", "--db", db))
    handle, got["open_n"], got["open_s"] = measured(lambda: KnowledgeBase.open(db, kb=kb))
    rng = random.Random(5)
    q_n, q_s, f_n, f_s = [], [], [], []
    for _ in range(questions):
        res, n, s = measured(lambda: handle.query(" ".join(rng.sample(vocab, 2)), options=QueryOptions(limit=10)))
        q_n.append(n)
        q_s.append(s)
        if res["results"]:
            path = rng.choice(res["results"])["filepath"]
            _, n, s = measured(lambda: handle.learning.feedback(res["query_id"], helpful=[path]))
            f_n.append(n)
            f_s.append(s)
    handle.close()
    got.update(query_n=statistics.median(q_n), query_s=statistics.median(q_s[len(q_s) // 4:]),
               feedback_n=statistics.median(f_n), feedback_s=statistics.median(f_s))
    _, got["learn_n"], got["learn_s"] = measured(lambda: cli("learn", "--db", db))
    files = sorted(kb.rglob("*.md"))
    for path in random.Random(9).sample(files, max(1, len(files) // 100)):
        with path.open("a", encoding="utf-8") as f:
            f.write("\nEdited: one more line.\n")
    _, got["edit_n"], got["edit_s"] = measured(lambda: cli("sync", "--db", db))
    got["docs"] = docs
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--questions", type=int, default=40)
    args = ap.parse_args(argv)
    import pgserver  # the dev extra's PostgreSQL 16 (+ pgvector)

    from bench.synth_kb import generate
    from bench.team import vocabulary

    count_round_trips()
    with tempfile.TemporaryDirectory(prefix="kbindex-roundtrips-") as tmp:
        work = Path(tmp)
        server = pgserver.get_server(str(work / "pg"), cleanup_mode="stop")
        try:
            results = {}
            for engine in ("sqlite", "postgres"):
                generate(work / engine, docs=args.docs, seed=23)
                kb = work / engine / "knowledge-base"
                db = str(work / "index.db") if engine == "sqlite" else server.get_uri()
                results[engine] = run(db, kb, vocabulary(kb), args.questions, args.docs)
        finally:
            server.cleanup()
    s, p = results["sqlite"], results["postgres"]
    rows = [("first sync", "sync"), ("open (KnowledgeBase.open)", "open"), ("query (median)", "query"),
            ("feedback (median)", "feedback"), ("learn", "learn"), ("sync after 1% edits", "edit")]
    print(f"{args.docs} documents, {args.questions} questions | PostgreSQL round trips | PostgreSQL time | "
          f"SQLite time | PG/SQLite")
    for label, key in rows:
        print(f"{label:<27} | {p[key + '_n']:>8g} | {p[key + '_s'] * 1000:8.1f} ms | {s[key + '_s'] * 1000:8.1f} ms | "
              f"{p[key + '_s'] / s[key + '_s']:.1f}×")
    print(json.dumps({"postgres": p, "sqlite": s}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
