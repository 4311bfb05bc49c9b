"""Store: migrations, pragmas, schema refusal, transactions, concurrency."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from kb_indexer.errors import BadDatabaseError, NotInitialisedError, SchemaError
from kb_indexer.store import open_db
from kb_indexer.store.migrations import MIGRATIONS
from kb_indexer.store.opening import init_db


def test_init_applies_all_migrations_and_records_them(tmp_path):
    conn, applied = init_db(tmp_path / "x.db", tmp_path / "kb")
    assert applied == [name for name, _ in MIGRATIONS]
    names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == applied
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    # Running init again applies nothing new.
    conn.close()
    _, again = init_db(tmp_path / "x.db", tmp_path / "kb")
    assert again == []


def test_older_database_upgrades_in_place(tmp_path, monkeypatch):
    from kb_indexer.store import migrations

    db = tmp_path / "old.db"
    # An index written by an older kbindex: only the first three migrations existed.
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:3])
    conn, applied = init_db(db, tmp_path / "kb")
    assert len(applied) == 3
    conn.execute("INSERT INTO documents (filepath, title) VALUES ('a.md', 'A')")
    conn.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS)
    conn = open_db(db)
    names = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [name for name, _ in MIGRATIONS]
    assert conn.execute("SELECT title FROM documents WHERE filepath = 'a.md'").fetchone()[0] == "A"


def test_newer_database_is_refused(tmp_path):
    db = tmp_path / "new.db"
    conn, _ = init_db(db, tmp_path / "kb")
    conn.execute("INSERT INTO _migrations (name) VALUES ('m999_from_the_future')")
    conn.close()
    with pytest.raises(SchemaError, match="newer kbindex"):
        open_db(db)


def test_missing_and_foreign_databases(tmp_path):
    with pytest.raises(NotInitialisedError, match="kbindex init"):
        open_db(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(BadDatabaseError, match="another application"):  # not "run init": init refuses it
        open_db(plain)


def test_similarity_constraints_hold_in_sql(tmp_path):
    conn, _ = init_db(tmp_path / "c.db", tmp_path / "kb")
    conn.execute("INSERT INTO keywords (keyword, display) VALUES ('a', 'a'), ('b', 'b')")
    bad = [
        "INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context) VALUES (2, 1, 'synonym', 'x')",
        "INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context) VALUES (1, 2, 'nope', 'x')",
        "INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context, score) VALUES (1, 2, 'synonym', 'x', 1.5)",
        "INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context, directional) VALUES (1, 2, 'synonym', 'x', 1)",
    ]
    for sql in bad:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql)
    # Several types for one pair are allowed.
    conn.execute("INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context) VALUES (1, 2, 'synonym', 'x')")
    conn.execute("INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context, directional, source_keyword_id) VALUES (1, 2, 'broader', 'x', 1, 2)")
    assert conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0] == 2


WRITER = textwrap.dedent("""
    import sys
    from kb_indexer.api import KnowledgeBase
    kb = KnowledgeBase.open(sys.argv[1])
    for i in range(int(sys.argv[3])):
        kb.relate(f"{sys.argv[2]}-{i}", f"{sys.argv[2]}-{i}-b", "synonym", "concurrency test", 0.5)
    kb.close()
""")


def test_concurrent_writer_processes_do_not_fail_with_locked(tmp_path):
    db = tmp_path / "conc.db"
    conn, _ = init_db(db, tmp_path / "kb")
    conn.close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(db), f"w{n}", "40"], stderr=subprocess.PIPE, text=True)
             for n in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    conn = open_db(db)
    assert conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0] == 160
