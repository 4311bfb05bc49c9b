"""Who asked, on an SQLite index: every query, attempt and mark records its asker ($KBINDEX_USER, else the OS
user); marks are kept per asker (one never overwrites another's, re-marking updates one's own); `feedback --last`
is this asker's last question; an index written before the asker was recorded keeps its rows as 'unknown'; an
SQLite file's user is its owner (the team-wide commands are allowed)."""

from __future__ import annotations

import sqlite3

import pytest

#: The asker of an SQLite index is $KBINDEX_USER; on PostgreSQL it is the login role
#: (tests/store/test_postgres_team_roles.py).
pytestmark = pytest.mark.sqlite_only("the asker from KBINDEX_USER and the .db file's columns")


def _as(user: str) -> dict:
    return {"KBINDEX_USER": user}


def test_the_asker_is_kbindex_user_in_history_and_feedback(kb, run):
    asked = run("query", "how does alphago work", "--db", kb.db_path, "-f", "json", env=_as("alice")).json()
    qid = asked["query_id"]
    assert run("feedback", "--last", "--helpful", "alphago-architecture.md", "--db", kb.db_path,
               env=_as("alice")).returncode == 0
    listed = run("history", "--db", kb.db_path, "-f", "json").json()["queries"]
    assert [(q["query_id"], q["asker"]) for q in listed] == [(qid, "alice")]
    detail = run("history", str(qid), "--db", kb.db_path, "-f", "json").json()
    assert detail["asker"] == "alice" and [a["asker"] for a in detail["attempts"]] == ["alice"]
    assert [(f["filepath"], f["asker"], f["excluded"]) for f in detail["feedback"]] == [
        ("alphago-architecture.md", "alice", False)]
    table = run("history", str(qid), "--db", kb.db_path)
    assert "asker" in table.stdout and "alice" in table.stdout


def test_marks_are_kept_per_asker_and_an_askers_own_mark_is_updated(kb, run):
    qid = run("query", "how does alphago work", "--db", kb.db_path, "-f", "json", env=_as("alice")).json()["query_id"]
    for user, flag in (("alice", "--helpful"), ("bob", "--not-helpful"), ("alice", "--not-helpful"),
                       ("alice", "--helpful")):
        assert run("feedback", str(qid), flag, "alphago-architecture.md", "--db", kb.db_path,
                   env=_as(user)).returncode == 0
    marks = run("history", str(qid), "--db", kb.db_path, "-f", "json").json()["feedback"]
    assert sorted((f["asker"], f["helpful"]) for f in marks) == [("alice", True), ("bob", False)]


def test_feedback_last_is_this_askers_last_question(kb, run):
    mine = run("query", "how does alphago work", "--db", kb.db_path, "-f", "json", env=_as("alice")).json()
    run("query", "what is reward shaping", "--db", kb.db_path, "-f", "json", env=_as("bob"))
    assert run("feedback", "--last", "--helpful", "alphago-architecture.md", "--db", kb.db_path,
               env=_as("alice")).returncode == 0
    assert [f["asker"] for f in kb.learning.feedback_show(mine["query_id"])["feedback"]] == ["alice"]
    nobody = run("feedback", "--last", "--helpful", "reward-shaping.md", "--db", kb.db_path, "-f", "json",
                 env=_as("carol"))
    assert nobody.returncode == 1 and nobody.error()["code"] == "not_found" and "carol" in nobody.error()["message"]


def test_the_owner_of_an_sqlite_file_clears_everyones_history(kb, run):
    for user in ("alice", "bob"):
        run("query", f"how does alphago work for {user}", "--db", kb.db_path, env=_as(user))
    cleared = run("clear-history", "--all", "--db", kb.db_path, "-f", "json", env=_as("alice"))
    assert cleared.returncode == 0 and cleared.json()["queries_removed"] == 2, cleared.stderr


def test_learned_list_names_the_askers_behind_an_item(kb, run):
    for user in ("alice", "bob"):
        qid = run("query", "how does alphago work", "--db", kb.db_path, "-f", "json", env=_as(user)).json()["query_id"]
        run("feedback", str(qid), "--helpful", "alphago-architecture.md", "--db", kb.db_path, env=_as(user))
    assert run("learn", "--db", kb.db_path).returncode == 0
    items = run("learned", "list", "--db", kb.db_path, "-f", "json").json()["learned"]
    assert items and all(i["askers"] == ["alice", "bob"] for i in items if i["feedback_ids"])


def test_relate_and_unrelate_record_their_author(kb, run):
    assert run("relate", "alphago", "go", "--type", "application", "--context", "AlphaGo plays Go",
               "--db", kb.db_path, env=_as("alice")).returncode == 0, "relate"
    con = sqlite3.connect(kb.db_path)
    assert con.execute("SELECT author FROM keyword_similarities WHERE context = 'AlphaGo plays Go'").fetchall() == [
        ("alice",)]
    assert con.execute("SELECT COUNT(*) FROM keyword_similarities WHERE author IS NOT NULL").fetchone()[0] == 1
    assert run("unrelate", "alphago", "go", "--type", "application", "--db", kb.db_path,
               env=_as("bob")).returncode == 0
    assert con.execute("SELECT author FROM similarity_tombstones").fetchall() == [("bob",)]


def test_an_index_from_before_the_asker_keeps_its_rows_as_unknown(tmp_path, project):
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.store import migrations

    db = tmp_path / "old.db"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA foreign_keys = ON")
    older = [(n, m) for n, m in migrations.MIGRATIONS if n != "m130_authored"]
    con.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT '')")
    con.execute("BEGIN")
    for name, step in older:
        step(con)
        con.execute("INSERT INTO _migrations (name) VALUES (?)", (name,))
    con.execute("INSERT INTO documents (filepath) VALUES ('a.md')")
    con.execute("INSERT INTO queries (question) VALUES ('old question')")
    con.execute("INSERT INTO query_attempts (query_id, keywords) VALUES (1, '[]')")
    con.execute("INSERT INTO query_feedback (query_id, filepath, helpful) VALUES (1, 'a.md', 1)")
    con.execute("INSERT INTO query_feedback (query_id, filepath, helpful) VALUES (1, 'b.md', 0)")
    con.execute("DELETE FROM query_feedback WHERE filepath = 'b.md'")
    con.execute("COMMIT")
    con.close()
    assert "m130_authored" in migrations.migrate(_connect(db))
    con = sqlite3.connect(db)
    assert con.execute("SELECT asker FROM queries").fetchall() == [("unknown",)]
    assert con.execute("SELECT asker FROM query_attempts").fetchall() == [("unknown",)]
    assert con.execute("SELECT id, asker, excluded FROM query_feedback").fetchall() == [(1, "unknown", 0)]
    con.execute("INSERT INTO query_feedback (query_id, filepath, helpful, asker) VALUES (1, 'a.md', 0, 'alice')")
    assert con.execute("SELECT MAX(id) FROM query_feedback").fetchone()[0] == 3   # ids of deleted rows not reused
    with pytest.raises(sqlite3.IntegrityError):
        con.execute("INSERT INTO query_feedback (query_id, filepath, helpful, asker) VALUES (1, 'a.md', 1, 'alice')")


def _connect(db):
    from kb_indexer.store.connection import connect
    return connect(db)
