"""The stress suite's own checks catch what they claim to (so a green stress run means something)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import stress  # noqa: E402
from bench.stress_common import Outcome, problem_with  # noqa: E402
from tests.helpers import kw, write_doc  # noqa: E402


def _outcome(code, stdout=b"", stderr=b""):
    return Outcome([], code, stdout, stderr, 0.1)


def test_problem_with_flags_every_broken_contract():
    internal = json.dumps({"error": {"code": "internal", "message": "boom"}}).encode()
    clean = json.dumps({"error": {"code": "invalid_input", "message": "bad"}}).encode()
    assert "hung" in problem_with(_outcome(None))
    assert "internal" in problem_with(_outcome(1, stderr=internal))
    assert "non-JSON" in problem_with(_outcome(0, stdout=b"Indexed 3 documents"))
    assert "traceback" in problem_with(_outcome(1, stderr=b"Traceback (most recent call last):"))
    assert "locked" in problem_with(_outcome(1, stderr=b"database is locked"))
    assert "not a JSON object" in problem_with(_outcome(1, stderr=b"Error: bad"))
    assert "exit" in problem_with(_outcome(-9))
    assert problem_with(_outcome(1, stderr=clean)) is None
    assert problem_with(_outcome(0, stdout=b'{"ok": true}')) is None


def test_sync_check_sees_a_half_applied_keyword_set_and_missing_fulltext_rows(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\nalpha\n", kw("s", "one", "two", "three"))
    write_doc(kbdir, "b.md", "# B\n\nbeta\n", kw("s", "four"))
    assert handle.sync()["errors"] == []
    db = handle.db_path
    before = {"a.md": frozenset({"one", "two", "three"}), "b.md": frozenset({"four"})}
    now = {"a.md": frozenset({"one", "two", "five"}), "b.md": frozenset({"four"})}
    assert stress.sync_state_problem(db, before, now, complete=False) is None
    assert "after a full sync" in stress.sync_state_problem(db, before, now, complete=True)
    with handle.conn:
        handle.conn.execute("DELETE FROM document_keywords WHERE keyword_id = "
                            "(SELECT id FROM keywords WHERE keyword = 'three')")
    assert "half-applied" in stress.sync_state_problem(db, before, now, complete=False)
    with handle.conn:
        handle.conn.execute("DELETE FROM documents_fts WHERE rowid = (SELECT id FROM documents WHERE "
                            "filepath = 'b.md')")
    assert "full-text rows" in stress.sync_state_problem(db, before, now, complete=False)


def test_learn_check_sees_half_processed_feedback(kb):
    out = kb.query("reinforcement learning")
    paths = [r["filepath"] for r in out["results"]]
    kb.learning.feedback(out["query_id"], paths[:2], [])
    db = kb.db_path
    assert stress.learn_state_problem(db, 0, complete=False) is None
    assert "unprocessed" in stress.learn_state_problem(db, 0, complete=True)
    with kb.conn:
        kb.conn.execute("UPDATE query_feedback SET processed = 1 WHERE id = (SELECT MIN(id) FROM query_feedback)")
    assert "half processed" in stress.learn_state_problem(db, 0, complete=False)


def test_integrity_check_sees_a_broken_foreign_key(tmp_path):
    db = tmp_path / "x.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id))")
    conn.execute("INSERT INTO c (p) VALUES (7)")
    conn.commit()
    conn.close()
    assert "foreign_key_check" in stress.integrity_problem(db)
