"""On PostgreSQL, `sync` and `learn` (and migrations) take an advisory lock on the server, so two of them from
any hosts never interleave; short writes (feedback, relate) take none and do not wait behind them."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.conftest import kbindex_exe

pytest.importorskip("psycopg")


def _waiting_for(admin, job: str) -> bool:
    """Whether some session waits for the job's advisory lock (not granted yet)."""
    from kb_indexer.store.pg.locks import _NAMESPACE, job_key

    row = admin.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                        "AND classid = %s AND objid = %s", (_NAMESPACE, job_key(job))).fetchone()
    return row[0] > 0


def _wait_until(check, what: str, limit: float = 30.0) -> None:
    end = time.monotonic() + limit
    while not check():
        assert time.monotonic() < end, f"gave up waiting: {what}"
        time.sleep(0.05)


@pytest.fixture
def server_kb(pg_url, project):
    from kb_indexer.api import KnowledgeBase

    kb, _ = KnowledgeBase.init(pg_url, project / "knowledge-base")
    kb.close()
    return pg_url


@pytest.mark.parametrize("job, args", [("sync", ["sync"]), ("learn", ["learn"]),
                                       # import replaces every row: a learn running meanwhile wrote learned items
                                       # for replaced document ids (a foreign-key failure): it takes both locks
                                       ("sync", ["import", "DUMP", "--force"]), ("learn", ["import", "DUMP", "--force"]),
                                       ("embed", ["import", "DUMP", "--force"])])
def test_a_job_waits_while_another_process_holds_its_lock(server_kb, job, args, tmp_path):
    import psycopg

    from kb_indexer.store.pg.locks import _NAMESPACE, job_key

    if "DUMP" in args:
        dump = tmp_path / "export.json"
        assert subprocess.run(kbindex_exe() + ["export", "--db", server_kb, "--output", str(dump)],
                              capture_output=True).returncode == 0
        args = [str(dump) if a == "DUMP" else a for a in args]
    holder = psycopg.connect(server_kb, autocommit=True)
    admin = psycopg.connect(server_kb, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s::int, %s::int)", (_NAMESPACE, job_key(job)))
    proc = subprocess.Popen(kbindex_exe() + args + ["--db", server_kb, "-f", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_until(lambda: _waiting_for(admin, job), f"`kbindex {job}` asking for its lock")
        assert proc.poll() is None  # it waits for the holder...
        # ...while a short write goes through at once
        from kb_indexer.api import KnowledgeBase
        with KnowledgeBase.open(server_kb) as kb:
            assert kb.list_docs()["count"] in (0, 18)
        holder.execute("SELECT pg_advisory_unlock(%s::int, %s::int)", (_NAMESPACE, job_key(job)))
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        holder.close()
        admin.close()
    assert proc.returncode == 0, err


def test_two_syncs_at_once_index_each_document_once(server_kb):
    procs = [subprocess.Popen(kbindex_exe() + ["sync", "--db", server_kb, "-f", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in results]
    import json
    added = sorted(json.loads(out)["added"] for out, _ in results)
    assert added == [0, 18]  # one indexed everything; the other, after it, found nothing to do
    from kb_indexer.api import KnowledgeBase
    with KnowledgeBase.open(server_kb) as kb:
        assert kb.list_docs()["count"] == 18

