"""`skills sync` directories: stored resolved and deduplicated, --forget, a stable winner for duplicate
names, KBINDEX_SKILLS directories never remembered (their skills go when the variable no longer names them)."""

from __future__ import annotations

import json
import shutil

import pytest

from kb_indexer.errors import NotFoundError, UsageError
from tests.skills.test_skills_sync import write


@pytest.fixture
def two(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "one", "one", "One from a")
    write(a, "dup", "dup", "Dup from a")
    write(b, "two", "two", "Two from b")
    write(b, "dup", "dup", "Dup from b")
    return a, b


def test_a_dir_given_as_dotdot_or_symlink_is_remembered_once(small, two, tmp_path):
    k, _ = small
    a, _ = two
    (tmp_path / "link").symlink_to(a)
    k.skills.sync([str(a)])
    out = k.skills.sync([str(a / ".." / "a"), str(tmp_path / "link")])
    assert out["errors"] == [] and out["dirs"] == [str(a.resolve())] and out["unchanged"] == 2
    assert [d["path"] for d in k.skills.all()["dirs"]] == [str(a.resolve())]


def test_unresolved_rows_of_older_versions_are_deduplicated_and_rewritten(small, two):
    k, _ = small
    a, _ = two
    k.skills.sync([str(a)])
    odd = str(a / ".." / "a")
    k.conn.execute("INSERT INTO skill_dirs (path) VALUES (?)", (odd,))
    k.conn.execute("UPDATE skills SET source_dir = ?, folder = ? || '/one' WHERE name = 'one'", (odd, odd))
    out = k.skills.sync()
    assert out["errors"] == [] and out["duplicates"] == [] and out["dirs"] == [str(a.resolve())]
    assert out["added"] == out["removed"] == [] and out["unchanged"] == 2
    assert [d["path"] for d in k.skills.all()["dirs"]] == [str(a.resolve())]
    assert k.skills.show("one")["source_dir"] == str(a.resolve())


def test_forget_drops_the_dir_and_its_skills_and_their_sessions(small, two):
    k, _ = small
    a, b = two
    k.skills.sync([str(a), str(b)])
    k.conn.execute("INSERT INTO skill_sessions (id) VALUES ('s')")
    k.conn.execute("INSERT INTO skill_session_skills (session_id, skill_name, last_matched_turn) VALUES ('s', 'one', 1)")
    out = k.skills.sync(forget=[str(a)])
    assert out["removed"] == ["one"] and out["forgotten"] == [str(a)]
    assert out["updated"] == ["dup"] and k.skills.show("dup")["description"] == "Dup from b"   # b's copy
    assert [d["path"] for d in k.skills.all()["dirs"]] == [str(b)]
    assert k.skills.session("s")["skills"] == []
    assert k.skills.sync()["removed"] == []                          # forgotten for good
    with pytest.raises(NotFoundError):
        k.skills.sync(forget=[str(a)])
    with pytest.raises(UsageError):
        k.skills.sync([str(b)], forget=[str(b)])
    out = k.skills.sync(forget=[str(b)])                             # the last one: nothing left
    assert out["removed"] == ["dup", "two"] and out["skills"] == 0 and k.skills.all()["dirs"] == []


def test_forget_is_one_transaction(small, two, monkeypatch):
    k, _ = small
    a, _ = two
    k.skills.sync([str(a)])
    from kb_indexer.skills import sync as mod

    def failing(conn, names):
        raise RuntimeError("boom")

    monkeypatch.setattr(mod, "drop_skills", failing)
    with pytest.raises(RuntimeError, match="boom"):
        k.skills.sync(forget=[str(a)])
    assert [d["path"] for d in k.skills.all()["dirs"]] == [str(a)] and k.skills.all()["count"] == 2


def test_cli_forget(cli, small, two):
    k, _ = small
    a, b = two
    k.skills.sync([str(a), str(b)])
    db = getattr(k.db_path, "url", k.db_path)   # the SQLite file, or the PostgreSQL URL
    k.close()
    res = cli("skills", "sync", "--forget", a, "--db", db, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["removed"] == ["one"]


def test_duplicate_winner_does_not_depend_on_command_line_order(small, two):
    k, _ = small
    a, b = two
    first = k.skills.sync([str(b), str(a)])            # both new: command-line order, b first
    assert k.skills.show("dup")["description"] == "Dup from b"
    assert first["duplicates"] == [{"name": "dup", "kept": str(b / "dup"), "skipped": str(a / "dup")}]
    again = k.skills.sync([str(a), str(b)])            # the indexed copy stays
    assert k.skills.show("dup")["description"] == "Dup from b" and again["updated"] == []
    assert again["duplicates"] == first["duplicates"]
    (b / "dup" / "SKILL.md").write_text("---\nname: dup\n---\n", encoding="utf-8")   # invalid now
    third = k.skills.sync()
    assert k.skills.show("dup")["description"] == "Dup from a" and third["updated"] == ["dup"]


def test_env_dir_skills_go_when_the_variable_no_longer_names_the_dir(small, two, monkeypatch):
    k, _ = small
    a, b = two
    k.skills.sync([str(a)])
    monkeypatch.setenv("KBINDEX_SKILLS", str(b))
    assert k.skills.sync()["added"] == ["two"]
    assert [d["path"] for d in k.skills.all()["dirs"]] == [str(a)]      # env dirs are not remembered
    monkeypatch.delenv("KBINDEX_SKILLS")
    out = k.skills.sync()
    assert out["removed"] == ["two"] and [s["name"] for s in k.skills.all()["skills"]] == ["dup", "one"]


def test_a_missing_remembered_dir_keeps_its_skills(small, two):
    k, _ = small
    a, b = two
    k.skills.sync([str(a), str(b)])
    shutil.rmtree(b)
    out = k.skills.sync()
    assert out["removed"] == [] and out["skills"] == 4 - 1    # dup of b was a duplicate, never indexed
    assert any(e["file"] == str(b) and "kept" in e["message"] for e in out["errors"])


def test_a_filesystem_root_is_refused_and_not_remembered(small, cli, run):
    handle, _ = small
    with pytest.raises(UsageError, match="filesystem root"):
        handle.skills.sync(["/"])
    assert handle.conn.execute("SELECT count(*) FROM skill_dirs").fetchone()[0] == 0
    res = run("skills", "sync", "/", "--db", getattr(handle.db_path, "url", handle.db_path), "--format", "json")
    assert res.returncode == 2 and "filesystem root" in res.error()["message"]
