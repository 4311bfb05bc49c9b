"""`init --db` on another application's SQLite file refuses (bad_database) without changing the file:
no kbindex tables added, no switch to WAL mode; `--force` overrides."""

from __future__ import annotations

import sqlite3

import pytest


@pytest.fixture
def foreign(tmp_path):
    path = tmp_path / "app.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    return path


def _state(path):
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return tables, mode, path.read_bytes()


def test_init_refuses_another_applications_database(run, foreign, tmp_path):
    before = _state(foreign)
    res = run("init", "--db", foreign, "--kb", tmp_path, "--format", "json")
    assert res.returncode == 1, res.stderr
    err = res.error()
    assert err["code"] == "bad_database"
    assert "users" in err["message"] and "--force" in err["message"]
    assert _state(foreign) == before  # same tables, same journal mode (not WAL), same bytes
    assert before[1] != "wal"
    assert not foreign.with_name(foreign.name + "-wal").exists()


def test_init_force_adds_kbindex_tables(run, foreign, tmp_path):
    res = run("init", "--db", foreign, "--kb", tmp_path, "--force", "--format", "json")
    assert res.returncode == 0, res.stderr
    tables, _, _ = _state(foreign)
    assert "users" in tables and "_migrations" in tables and "documents" in tables


def test_opening_another_applications_database_is_bad_database(run, foreign):
    res = run("db-stats", "--db", foreign, "--format", "json")
    assert res.returncode == 1
    assert res.error()["code"] == "bad_database"


def test_init_again_on_a_kbindex_index_and_on_an_empty_file_still_works(run, tmp_path):
    db = tmp_path / "kbindex.db"
    assert run("init", "--db", db, "--kb", tmp_path).returncode == 0
    assert run("init", "--db", db, "--kb", tmp_path).returncode == 0
    empty = tmp_path / "empty.db"
    empty.touch()
    assert run("init", "--db", empty, "--kb", tmp_path).returncode == 0


def test_not_sqlite_at_all_is_bad_database(run, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some text, long enough to not be an empty database " * 20)
    res = run("init", "--db", path, "--kb", tmp_path, "--format", "json")
    assert res.returncode == 1
    assert res.error()["code"] == "bad_database"
    assert path.read_text().startswith("just some text")
