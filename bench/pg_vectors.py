"""Semantic search on PostgreSQL: pgvector's HNSW index beside the numpy path, and SQLite, in one run.

    python3 bench/pg_vectors.py                  # 20,000 documents, 384 dimensions
    python3 bench/pg_vectors.py --docs 2000      # a quick look

Starts its own PostgreSQL (the ``pgserver`` wheel: PostgreSQL 16 with pgvector 0.6.2) and builds the same
knowledge base three times: an SQLite file (numpy over the packed, memory-mapped matrix); a PostgreSQL
database with pgvector (HNSW per model); a PostgreSQL database owned by a role that may not create the
extension (numpy over the packed matrix read from the server). The documents are short generated texts
synced with kbindex; their vectors are **random unit vectors** (numpy, seeded: one chunk per document,
the same on every engine) written through kbindex's store (``replace_document``, then what `embed` does
at its end), stored under the test suite's embedding double ``fake-embed-384`` (tests/fake_llm.py, loaded
as a plugin) so that the query embeds the question without a model. Random vectors are fine for speed,
and are the hard case for an approximate index.

Measured, same run:

* cold ``kbindex query --method semantic`` (one process per question, connection set-up included): median
  wall time and peak RSS of the process (GNU ``time``, which starts each query: both figures include its
  few milliseconds, the same for every engine); each question is asked once beforehand (its embedding
  is then cached in the index, as an agent asking again finds it);
* top-10 overlap of the HNSW answer with the exact (numpy) answer, for the questions and for 200 random
  unit vectors, with ``hnsw.ef_search`` as kbindex sets it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PLUGIN = REPO / "tests" / "fake_llm.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "KBINDEX_LLM_PLUGINS": str(PLUGIN)}
DIM = 384
EMBED = ["--embed-backend", "fake-embed", "--embed-model", f"fake-embed-{DIM}"]
WORDS = ("wing flow boundary layer pressure shock heat transfer laminar turbulent supersonic nozzle panel "
         "flutter buckling cylinder plate cone jet wake vortex drag lift mach number reynolds").split()


def write_kb(root: Path, docs: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(docs):
        folder = root / f"s{i // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"d{i:05d}.md").write_text(f"# Document {i}\n\n" + " ".join(rng.choices(WORDS, k=30)) + "\n",
                                             encoding="utf-8")


def build(target: str, kb_root: Path, seed: int) -> dict[str, float]:
    """Sync the KB into ``target`` and store one random unit vector per document (by path, seeded)."""
    import numpy as np

    from kb_indexer.api import KnowledgeBase
    from kb_indexer.store import vectors as store
    from kb_indexer.store.connection import transaction

    kb, _ = KnowledgeBase.init(target, kb_root)
    t = time.perf_counter()
    kb.sync()
    synced = time.perf_counter() - t
    rows = kb.conn.execute("SELECT id, filepath FROM documents ORDER BY filepath").fetchall()
    matrix = np.random.default_rng(seed).standard_normal((len(rows), DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    t = time.perf_counter()
    with transaction(kb.conn):
        model = store.ensure_model(kb.conn, "fake-embed", f"fake-embed-{DIM}", DIM)
        for (doc_id, path), vec in zip(rows, matrix):
            store.replace_document(kb.conn, model, doc_id, f"bench:{path}", vec[None, :])
    stored = time.perf_counter() - t
    t = time.perf_counter()
    with transaction(kb.conn):
        store.ensure_packed(kb.conn, store.find_model(kb.conn, "fake-embed", f"fake-embed-{DIM}"))
    finished = time.perf_counter() - t
    kb.close()
    return {"sync_s": round(synced, 1), "store_vectors_s": round(stored, 1), "index_or_pack_s": round(finished, 1)}


TIME = shutil.which("time") or "/usr/bin/time"


def _one(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall ms, peak RSS MB) of one process. The peak comes from GNU time, the query's parent: Linux
    carries the RSS high-water mark over exec, so ``wait4`` on a child of this (large) process would
    report this process's size."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M", "-o", rss.name, *cmd], cwd=cwd, env=ENV, stdout=out, stderr=err)
        wall = (time.perf_counter() - t) * 1000
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read().decode()[-500:]}")
        out.seek(0)
        data = json.loads(out.read())
        peak_kb = int(rss.read().split()[-1])
    if not data["semantic"]["used"]:
        raise SystemExit(f"vectors not used: {data['semantic']}")
    return wall, peak_kb / 1024


def cold(target: str, cwd: Path, questions: list[str]) -> dict[str, float]:
    def cmd(q: str) -> list[str]:
        return [sys.executable, "-m", "kb_indexer", "query", q, "--db", target, "--method", "semantic",
                "--format", "json", "--no-stale-check", *EMBED]

    for q in questions:   # the question's embedding is cached, the OS cache warm
        _one(cmd(q), cwd)
    runs = [_one(cmd(q), cwd) for q in questions]
    return {"cold_ms_p50": round(statistics.median(r[0] for r in runs), 1),
            "rss_mb_max": round(max(r[1] for r in runs), 1)}


def overlap(pg_url: str, questions: list[str], seed: int) -> dict[str, float]:
    """Mean top-10 overlap of the HNSW answer with the exact one (the same vectors, scored with numpy)."""
    import numpy as np

    from kb_indexer.api import KnowledgeBase
    from kb_indexer.store import vectors as store
    from tests.fake_llm import fake_vector

    kb = KnowledgeBase.open(pg_url)
    model = store.latest_model(kb.conn)
    rows = kb.conn.execute("SELECT document_id, vector FROM embedding_chunks WHERE model_id = ? "
                           "ORDER BY document_id", (model.id,)).fetchall()
    ids = np.array([r[0] for r in rows])
    matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype="<f4").reshape(len(rows), DIM)
    asked = [np.asarray(fake_vector(q, DIM), dtype=np.float32) for q in questions]
    asked += list(np.random.default_rng(seed + 1).standard_normal((200, DIM)).astype(np.float32))
    found = []
    for q in asked:
        q = q / np.linalg.norm(q)
        exact = set(ids[np.argsort(-(matrix @ q))[:10]].tolist())
        top, _ = store.nearest(kb.conn, model, q, 100)
        served = sorted(top, key=lambda d: -top[d])[:10]
        found.append(len(exact & set(served)) / 10)
    kb.close()
    return {"overlap_at_10": round(sum(found) / len(found), 3), "queries": len(found),
            "min_overlap": min(found)}


def _unprivileged(admin_uri: str) -> str:
    import psycopg

    name, role = f"bench_{uuid.uuid4().hex[:8]}", f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{role}"')
    return psycopg.conninfo.make_conninfo(admin_uri, dbname=name, user=role)


def _database(admin_uri: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return psycopg.conninfo.make_conninfo(admin_uri, dbname=name)


def _url(conninfo: str) -> str:
    """A libpq key=value string as the postgresql:// URL kbindex takes."""
    from urllib.parse import quote

    import psycopg

    p = psycopg.conninfo.conninfo_to_dict(conninfo)
    port = f"&port={p['port']}" if p.get("port") else ""
    return f"postgresql://{p['user']}@/{p['dbname']}?host={quote(str(p['host']), safe='')}{port}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--questions", type=int, default=7)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ["KBINDEX_LLM_PLUGINS"] = str(PLUGIN)
    import pgserver

    rng = random.Random(args.seed)
    questions = [" ".join(rng.choices(WORDS, k=3)) for _ in range(args.questions)]
    work = Path(tempfile.mkdtemp(prefix="kbindex-bench-vec-"))
    pgdata = tempfile.mkdtemp(prefix="kbindex-bench-pgdata-")
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    try:
        kb_root = work / "knowledge-base"
        write_kb(kb_root, args.docs, args.seed)
        admin = server.get_uri()
        targets = {"sqlite (numpy, mapped matrix)": str(work / "kbindex.db"),
                   "postgres (numpy, no pgvector)": _url(_unprivileged(admin)),
                   "postgres (pgvector HNSW)": _url(_database(admin))}
        results: dict[str, Any] = {"docs": args.docs, "dim": DIM, "questions": len(questions), "engines": {}}
        for name, target in targets.items():
            built = build(target, kb_root, args.seed)
            results["engines"][name] = {**built, **cold(target, work, questions)}
        results["hnsw_vs_exact"] = overlap(targets["postgres (pgvector HNSW)"], questions, args.seed)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(pgdata, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"{args.docs} documents, {DIM} dimensions (random unit vectors), {len(questions)} cold queries each")
    print(f"{'engine':32} {'cold p50 ms':>12} {'RSS MB':>8} {'sync s':>8} {'vectors s':>10} {'index s':>8}")
    for name, r in results["engines"].items():
        print(f"{name:32} {r['cold_ms_p50']:12.1f} {r['rss_mb_max']:8.1f} {r['sync_s']:8.1f} "
              f"{r['store_vectors_s']:10.1f} {r['index_or_pack_s']:8.1f}")
    o = results["hnsw_vs_exact"]
    print(f"HNSW top-10 overlap with exact: {o['overlap_at_10']} (min {o['min_overlap']}, {o['queries']} queries)")


if __name__ == "__main__":
    main()
