"""The `kbindex` command against a PostgreSQL server named by --db or KBINDEX_DB (a postgresql:// URL, kept
as given, its password never printed), beside the same commands on an SQLite file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO, kbindex_exe


def _kb(run, db, *args, **kw):
    return run(*args, "--db", db, "--format", "json", **kw)


@pytest.fixture
def synced(engine_db, project, run):
    """(db, run) with the bundled KB copy initialised and synced through the CLI."""
    init = _kb(run, engine_db, "init", "--kb", project / "knowledge-base")
    assert init.returncode == 0, init.stderr
    assert init.json()["created"] is True
    sync = _kb(run, engine_db, "sync")
    assert sync.returncode == 0, sync.stderr
    assert sync.json()["added"] == 18 and sync.json()["errors"] == []
    return engine_db


def test_reads_and_relations_through_the_cli(synced, run):
    docs = _kb(run, synced, "list-docs")
    assert docs.returncode == 0 and docs.json()["count"] == 18
    show = _kb(run, synced, "show", "alphago-architecture.md").json()
    assert show["title"] == "AlphaGo Architecture"
    assert any(k["keyword"] == "AlphaGo" for k in _kb(run, synced, "keywords", "alphago-architecture.md").json()["keywords"])
    assert [d["filepath"] for d in _kb(run, synced, "docs", "alphago").json()["documents"]]
    rel = _kb(run, synced, "relate", "alphago", "go", "-t", "application", "-c", "AlphaGo plays Go", "-s", "0.8")
    assert rel.returncode == 0, rel.stderr
    assert rel.json()["action"] == "created"
    gone = _kb(run, synced, "unrelate", "alphago", "go", "-t", "application")
    assert gone.returncode == 0 and gone.json()["removed"] == 1
    stats = _kb(run, synced, "db-stats").json()
    assert stats["documents"] == 18 and stats["similarities"] == 72


def test_feedback_learn_and_undo_through_the_cli(synced, run):
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.learn.history import record

    with KnowledgeBase.open(synced) as kb:  # a query as `kbindex query` records it
        qid, _ = record(kb.conn, "How does the Go program combine tree search and networks?", None,
                        keywords=["alphago"], expand_depth=1, threshold=0.3, method="keyword",
                        results=[{"filepath": "alphago-architecture.md", "relevance_score": 1.0,
                                  "matched_keywords": ["alphago"], "sources": ["keyword"]}],
                        expansions=[], options={})
    fb = _kb(run, synced, "feedback", str(qid), "--helpful", "alphago-architecture.md")
    assert fb.returncode == 0, fb.stderr
    assert _kb(run, synced, "history").json()["queries"][0]["feedback"] == 1
    learned = _kb(run, synced, "learn")
    assert learned.returncode == 0, learned.stderr
    assert [s["kind"] for s in learned.json()["suggestions"]] == ["association"]
    items = _kb(run, synced, "learned", "list").json()["learned"]
    undo = _kb(run, synced, "learned", "remove", str(items[0]["id"]))
    assert undo.returncode == 0 and undo.json()["removed"] == [items[0]["id"]]


def test_kbindex_db_names_the_server_too(pg_url, project, run):
    init = run("init", "--kb", project / "knowledge-base", "-f", "json", env={"KBINDEX_DB": pg_url})
    assert init.returncode == 0, init.stderr
    assert init.json()["db"].split("?")[0].rsplit("/", 1)[1] == pg_url.split("?")[0].rsplit("/", 1)[1]
    listed = run("list-docs", "-f", "json", env={"KBINDEX_DB": pg_url})
    assert listed.returncode == 0 and listed.json()["count"] == 0


def test_an_unreachable_server_is_an_error_that_hides_the_password(run):
    url = "postgresql://agent:s3cret-pw@127.0.0.1:1/kb?connect_timeout=2"
    res = run("list-docs", "--db", url, "-f", "json")
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.error()["code"] == "db_unavailable"
    assert "s3cret-pw" not in res.stderr and "agent:***@127.0.0.1:1/kb" in res.stderr


def test_the_sqlite_path_never_imports_psycopg(tmp_path):
    """A cold command on an SQLite index loads no PostgreSQL driver (checked with -X importtime)."""
    db = tmp_path / "kbindex.db"
    (tmp_path / "knowledge-base").mkdir()
    subprocess.run(kbindex_exe() + ["init", "--db", str(db), "--kb", str(tmp_path / "knowledge-base")],
                   check=True, capture_output=True, cwd=tmp_path)
    proc = subprocess.run([sys.executable, "-X", "importtime", str(REPO / "kbindex.py"), "search", "alphago",
                           "--db", str(db), "-f", "json"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line]
    assert "kb_indexer.store.dbapi" in imported or "kb_indexer.store.connection" in imported
    assert not [m for m in imported if m.startswith(("psycopg", "kb_indexer.store.pg"))]
