"""Behind a stuck lock holder (a `learn` left on a machine that froze: the learn and sync locks held, a
transaction open on the feedback mark), `feedback` on that mark, `learn` and `sync` each answer `busy` once
the busy timeout has passed, on both engines: a JSON error, exit 1, nothing written. Before, on PostgreSQL
all three waited with no limit (and on SQLite so did `learn` and `sync`, behind the job's lock file).

``KBINDEX_BUSY_TIMEOUT`` shortens the 30 s timeout here; the subprocess timeout only keeps a hang from
blocking the suite."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

SHORT = {"KBINDEX_BUSY_TIMEOUT": "1"}
HANG = 120   # seconds: far beyond the shortened timeout


@contextmanager
def _stuck_holder(db: str, query_id: int) -> Iterator[None]:
    """Hold what a frozen `learn` holds: the learn and sync job locks and an open transaction that has written
    (SQLite: the write lock; PostgreSQL: the row of the query's feedback mark)."""
    if not db.startswith("postgresql://"):
        fds = [os.open(f"{db}-{job}.lock", os.O_RDWR | os.O_CREAT, 0o644) for job in ("learn", "sync")]
        writer = sqlite3.connect(db, isolation_level=None)
        try:
            for fd in fds:
                fcntl.flock(fd, fcntl.LOCK_EX)
            writer.execute("BEGIN IMMEDIATE")
            yield
        finally:
            writer.close()
            for fd in fds:
                os.close(fd)
        return
    import psycopg

    from kb_indexer.store.pg.locks import _NAMESPACE, job_key

    holder = psycopg.connect(db, autocommit=True)
    try:
        for job in ("learn", "sync"):
            holder.execute("SELECT pg_advisory_lock(%s::int, %s::int)", (_NAMESPACE, job_key(job)))
        holder.execute("BEGIN")
        assert holder.execute("UPDATE query_feedback SET processed = processed WHERE query_id = %s",
                              (query_id,)).rowcount == 1
        yield
    finally:
        holder.close()


def _assert_busy(result, command: str) -> None:
    assert result.returncode == 1, (command, result.stdout, result.stderr)
    assert result.stdout == ""
    error = json.loads(result.stderr[result.stderr.find("{"):])["error"]   # after the warning that it waits
    assert error["code"] == "busy", (command, error)
    assert "nothing was written" in error["message"] and "Run the command again" in error["message"], error


def test_feedback_learn_and_sync_answer_busy_behind_a_stuck_holder(engine_db, project, run):
    db, kb = engine_db, project / "knowledge-base"
    assert run("init", "--db", db, "--kb", kb).returncode == 0
    assert run("sync", "--db", db).returncode == 0
    query = run("query", "reward shaping", "--db", db, "-f", "json", cwd=project)
    assert query.returncode == 0, query.stderr
    qid = query.json()["query_id"]
    mark = run("feedback", str(qid), "--helpful", "reward-shaping.md", "--db", db, "-f", "json")
    assert mark.returncode == 0, mark.stderr
    (kb / "new-note.md").write_text("# A new note\n\nWritten while the index was stuck.\n", encoding="utf-8")

    with _stuck_holder(db, qid):
        feedback = run("feedback", str(qid), "--not-helpful", "reward-shaping.md", "--db", db, "-f", "json",
                       env=SHORT, timeout=HANG)
        _assert_busy(feedback, "feedback")
        learn = run("learn", "--db", db, "-f", "json", env=SHORT, timeout=HANG)
        _assert_busy(learn, "learn")
        assert "another kbindex learn of this index is running: waiting" in learn.stderr
        sync = run("sync", "--db", db, "-f", "json", env=SHORT, timeout=HANG)
        _assert_busy(sync, "sync")
        assert "another kbindex sync of this index is running: waiting" in sync.stderr

    assert _marks(db, qid) == [("reward-shaping.md", 1, 0)]   # still helpful, unprocessed: nothing was written
    assert not _indexed(db, "new-note.md")


def _marks(db: str, qid: int) -> list[tuple[str, int, int]]:
    sql = "SELECT filepath, helpful, processed FROM query_feedback WHERE query_id = {} ORDER BY filepath"
    return [(str(a), int(b), int(c)) for a, b, c in _rows(db, sql.format(int(qid)))]


def _indexed(db: str, path: str) -> bool:
    return bool(_rows(db, f"SELECT count(*) FROM documents WHERE filepath = '{path}'")[0][0])


def _rows(db: str, sql: str) -> list[tuple]:
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return conn.execute(sql).fetchall()
    with sqlite3.connect(Path(db)) as conn:
        return conn.execute(sql).fetchall()
