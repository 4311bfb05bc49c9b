"""The learning policy (auto or review, min_askers, max_share) and the review queue: under review `learn` holds
what it learns as pending items that change no ranking; approving them gives the ranking auto would have given;
a rejected item is not proposed again; a removed item can be restored, and the list says who removed it."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.learn.policy import DEFAULTS, supported
from kb_indexer.store.engine import is_postgres

pytestmark = pytest.mark.both_engines

QUESTIONS = ("tree search for board games", "how does alphago work", "ranking documents by words")


def _mark(kb) -> None:
    qid = kb.query("tree search for board games")["query_id"]
    kb.learning.feedback(qid, ["alphago-architecture.md"], ["supervised-learning-basics.md"])
    qid = kb.query("board game search tree")["query_id"]
    kb.learning.feedback(qid, ["alphago-architecture.md"], [])


def _rankings(kb) -> list[list[tuple[str, float]]]:
    out = []
    for q in QUESTIONS:
        res = kb.query(q)
        out.append([(r["filepath"], round(r["relevance_score"], 9)) for r in res["results"]])
    return out


def test_the_policy_defaults_by_engine_and_can_be_set(kb, index_engine):
    assert kb.learning.policy() == DEFAULTS["postgres" if index_engine == "postgres" else "sqlite"]
    out = kb.learning.set_policy("review", 2, 0.5)
    assert out == {"mode": "review", "min_askers": 2, "max_share": 0.5} == kb.learning.policy()


@pytest.mark.parametrize("args", [("sometimes", None, None), (None, 0, None), (None, None, 0.0),
                                  (None, None, 1.5), ("review", 2, -1.0), (None, None, None)])
def test_bad_policy_values_write_nothing(kb, args):
    before = kb.learning.policy()
    with pytest.raises(UsageError):
        kb.learning.set_policy(*args)
    assert kb.learning.policy() == before


def test_review_holds_everything_until_approved_and_approval_equals_auto(project, request, index_engine, tmp_path):
    from kb_indexer.api import KnowledgeBase
    results = {}
    for mode in ("auto", "review"):
        target = str(tmp_path / f"{mode}.db") if index_engine == "sqlite" else _fresh_pg(request, mode)
        kb, _ = KnowledgeBase.init(target, project / "knowledge-base")
        try:
            kb.sync()
            kb.learning.set_policy(mode)
            _mark(kb)
            before = _rankings(kb)
            out = kb.learning.learn()
            if mode == "review":
                assert out["held_for_review"] == out["summary"]["total"] > 0 and out["applied"] == 0
                assert _rankings(kb) == before      # nothing pending changes a ranking
                pending = [i["id"] for i in kb.learning.pending()["learned"]]
                assert len(pending) == out["held_for_review"] and kb.learning.learned_list()["count"] == 0
                assert kb.learning.approve(pending)["approved"] == pending
                assert kb.learning.pending()["count"] == 0
                assert {i["decided_by"] for i in kb.learning.learned_list()["learned"]} != {None}
            else:
                assert out["held_for_review"] == 0 and out["applied"] > 0
            results[mode] = _rankings(kb)
        finally:
            kb.close()
    assert results["review"] == results["auto"]


def _fresh_pg(request, mode: str) -> str:
    """A fresh PostgreSQL database of its own for each mode (dropped after the test)."""
    import psycopg
    from tests.conftest import _database_url
    admin = request.getfixturevalue("pg_server").get_uri()
    name = f"kb_review_{mode}_{abs(hash(request.node.nodeid)) % 10**8}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    request.addfinalizer(drop)
    return _database_url(admin, name)


def test_a_rejected_item_is_not_proposed_again(kb):
    kb.learning.set_policy("review")
    _mark(kb)
    held = kb.learning.learn()["held_for_review"]
    ids = [i["id"] for i in kb.learning.pending()["learned"]]
    assert kb.learning.reject(ids)["rejected"] == ids
    assert kb.learning.learned_list(status="rejected")["count"] == held
    again = kb.learning.learn(reprocess=True)
    assert again["held_for_review"] == 0 and kb.learning.pending()["count"] == 0


def test_approve_and_reject_name_what_was_not_pending(kb):
    _mark(kb)
    kb.learning.learn()
    first = kb.learning.learned_list()["learned"][0]["id"]
    assert kb.learning.approve([first]) == {"approved": [], "count": 0, "not_pending": [first]}


def test_a_removed_item_is_restored_and_the_list_says_who_removed_it(kb, monkeypatch):
    monkeypatch.setenv("KBINDEX_USER", "curator-ann")
    _mark(kb)
    before = _rankings(kb)
    kb.learning.learn()
    learned = _rankings(kb)
    ids = [i["id"] for i in kb.learning.learned_list()["learned"]]
    kb.learning.learned_remove(ids)
    removed = kb.learning.learned_list(status="removed")["learned"]
    # the connection's asker: KBINDEX_USER on SQLite, the login role on PostgreSQL (which nobody can forge)
    asker = "curator-ann" if not is_postgres(kb.conn) else kb.conn.execute("SELECT session_user").fetchone()[0]
    assert {i["removed_by"] for i in removed} == {asker} and all(i["removed_at"] for i in removed)
    assert _rankings(kb) == before
    assert kb.learning.restore(ids)["restored"] == sorted(ids)
    assert _rankings(kb) == learned
    assert kb.learning.learned_list(status="removed")["count"] == 0


def test_the_command_line_shows_sets_and_refuses_a_bad_policy(kb, run):
    res = run("learned", "policy", "--db", kb.db_path, "-f", "json")
    assert res.returncode == 0 and res.json()["mode"] == "auto"
    res = run("learned", "policy", "--set", "review", "--min-askers", "2", "--max-share", "0.5",
              "--db", kb.db_path, "-f", "json")
    assert res.returncode == 0 and res.json() == {"mode": "review", "min_askers": 2, "max_share": 0.5}
    bad = run("learned", "policy", "--set", "auto", "--max-share", "2", "--db", kb.db_path, "-f", "json")
    assert bad.returncode == 2 and bad.error()["code"] in ("usage", "invalid_input") and bad.stdout == ""
    assert run("learned", "policy", "--db", kb.db_path, "-f", "json").json()["mode"] == "review"
    assert run("learned", "policy", "--db", kb.db_path).returncode == 0


def test_the_command_line_review_queue(kb, run):
    kb.learning.set_policy("review")
    _mark(kb)
    out = run("learn", "--db", kb.db_path)
    assert out.returncode == 0 and "for review" in out.stdout
    pending = run("learned", "list", "--pending", "--db", kb.db_path, "-f", "json").json()["learned"]
    ids = [str(i["id"]) for i in pending]
    res = run("learned", "approve", ids[0], "--db", kb.db_path, "-f", "json")
    assert res.returncode == 0 and res.json()["approved"] == [int(ids[0])]
    res = run("learned", "reject", *ids[1:], "--db", kb.db_path, "-f", "json")
    assert res.returncode == 0 and res.json()["count"] == len(ids) - 1
    assert run("learned", "list", "--rejected", "--db", kb.db_path, "-f", "json").json()["count"] == len(ids) - 1


@pytest.mark.parametrize("askers,policy,expected", [
    ({"ann": 3}, {"min_askers": 1, "max_share": 0.5}, True),        # one asker is fine with min_askers 1
    ({"ann": 3}, {"min_askers": 2, "max_share": 1.0}, False),
    ({"ann": 1, "bob": 1}, {"min_askers": 2, "max_share": 0.5}, True),
    ({"ann": 300, "bob": 1}, {"min_askers": 2, "max_share": 0.5}, False),
    ({"ann": 2, "bob": 1, "cy": 1}, {"min_askers": 2, "max_share": 0.5}, True),
    ({"ann": 0, "bob": 2}, {"min_askers": 2, "max_share": 1.0}, False),
    ({}, {"min_askers": 1, "max_share": 1.0}, False),
])
def test_supported_counts_distinct_askers_and_caps_one_askers_share(askers, policy, expected):
    assert supported(askers, policy) is expected


@pytest.mark.sqlite_only("the rebuilt CHECK constraint of an SQLite file")
def test_an_upgraded_index_keeps_its_learned_items_and_takes_the_new_statuses(tmp_path):
    import shutil
    import sqlite3
    from pathlib import Path

    from kb_indexer.api import KnowledgeBase
    fixture = sorted((Path(__file__).resolve().parents[1] / "data" / "upgrade").glob("*.db"))[-1]
    db = tmp_path / "old.db"
    shutil.copy(fixture, db)
    with sqlite3.connect(db) as old:
        before = old.execute("SELECT id, key, status FROM learned_items ORDER BY id").fetchall()
        terms = old.execute("SELECT COUNT(*) FROM learned_terms").fetchone()[0]
    assert before, "the fixture has learned items"
    with KnowledgeBase.open(db) as kb:
        assert kb.learning.policy()["mode"] == "auto"
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT id, key, status FROM learned_items ORDER BY id").fetchall() == before
        assert conn.execute("SELECT COUNT(*) FROM learned_terms").fetchone()[0] == terms
        conn.execute("UPDATE learned_items SET status = 'pending' WHERE id = ?", (before[0][0],))
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("UPDATE learned_items SET status = 'unknown' WHERE id = ?", (before[0][0],))
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_dry_run_previews_the_changes_for_real_and_writes_nothing(kb, run):
    _mark(kb)
    history = kb.learning.history(limit=0)["count"]
    out = kb.learning.learn(dry_run=True)
    assert kb.learning.learned_list(include_removed=True)["count"] == 0
    assert kb.learning.history(limit=0)["count"] == history
    assert all(not f["processed"] for f in kb.learning.feedback_show(kb.learning.last_query_id())["feedback"])
    assert out["changes"] and out["summary"]["total"] > 0
    kb.learning.learn()
    for change in out["changes"]:
        after = kb.query(change["question"])["results"][:len(change["after"])]
        assert [(r["filepath"], r["relevance_score"]) for r in after] == \
            [(r["filepath"], r["score"]) for r in change["after"]]
    text = run("learn", "--dry-run", "--reprocess", "--db", kb.db_path)
    assert text.returncode == 0 and "Dry run: nothing written." in text.stdout
