"""A long sync commits in batches: other writers never wait long, and a killed sync keeps what it did."""

from __future__ import annotations

import sqlite3

import pytest

from helpers import die_at_read, kw, write_doc
from kb_indexer.index import reader as reader_mod
from kb_indexer.index import sync as sync_mod
from kb_indexer.store import fulltext

pytestmark = pytest.mark.both_engines


def _docs(kbdir, n, prefix="d"):
    for i in range(n):
        write_doc(kbdir, f"{prefix}{i:03d}.md", f"# Doc {i}\n\nbody {i}\n", kw(f"s{i}", f"k{i}", "shared"))


def test_sync_commits_in_batches_of_bounded_size(small, monkeypatch):
    handle, kbdir = small
    monkeypatch.setattr(sync_mod, "BATCH_DOCS", 7)
    _docs(kbdir, 30)
    res = handle.sync()
    assert res["added"] == 30 and res["errors"] == []
    assert res["batches"] == 5            # ceil(30 / 7) batches of documents, no deletions
    assert handle.sync()["batches"] == 0  # nothing changed: nothing written


def test_a_sync_killed_between_batches_keeps_them_and_a_rerun_goes_on(small, monkeypatch, index_engine):
    handle, kbdir = small
    monkeypatch.setattr(sync_mod, "BATCH_DOCS", 10)
    _docs(kbdir, 35)
    real = die_at_read(monkeypatch, 25)
    with pytest.raises(KeyboardInterrupt):
        handle.sync()
    stored = handle.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert stored == 20                   # the two committed batches; the third is rolled back whole
    ids = [r[0] for r in handle.conn.execute("SELECT id FROM documents")]
    assert len(fulltext.bodies(handle.conn, ids)) == stored   # no half-applied document
    monkeypatch.setattr(reader_mod, "load_document", real)
    res = handle.sync()
    assert (res["added"], res["unchanged"]) == (15, 20)
    if index_engine == "sqlite":
        assert handle.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_batch_ends_when_its_time_is_up(small, monkeypatch):
    handle, kbdir = small
    monkeypatch.setattr(sync_mod, "BATCH_SECONDS", 0.0)  # every document overruns: one per batch
    _docs(kbdir, 4)
    assert handle.sync()["batches"] == 4


@pytest.mark.sqlite_only("SQLite's one database-wide write lock between batches (PostgreSQL locks rows)")
def test_another_writer_gets_the_lock_between_batches(small, monkeypatch):
    """While a sync runs, a second connection can write between two of its batches."""
    handle, kbdir = small
    monkeypatch.setattr(sync_mod, "BATCH_DOCS", 5)
    _docs(kbdir, 15)
    other = sqlite3.connect(handle.db_path, timeout=0)  # fails at once if the lock is held
    wrote = []
    real_checkpoint = sync_mod._batches

    def batches_with_a_writer(items, conn):
        for batch in real_checkpoint(items, conn):
            yield batch
            other.execute("INSERT INTO meta (key, value) VALUES (?, 'x')", (f"probe{len(wrote)}",))
            other.commit()
            wrote.append(True)

    monkeypatch.setattr(sync_mod, "_batches", batches_with_a_writer)
    assert handle.sync()["added"] == 15
    assert len(wrote) == 3
    other.close()


def test_deleted_files_are_removed_in_batches(small, monkeypatch):
    handle, kbdir = small
    _docs(kbdir, 12)
    handle.sync()
    monkeypatch.setattr(sync_mod, "BATCH_DOCS", 5)
    for path in kbdir.glob("d00*.md"):
        path.unlink()
        path.with_name(path.stem + ".keywords.json").unlink()
    res = handle.sync()
    assert res["removed"] == 10 and res["batches"] == 2
    assert handle.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 2


def test_folder_filter_is_case_exact(small):
    handle, kbdir = small
    write_doc(kbdir, "guides/a.md", "# A\n\ntext\n")
    write_doc(kbdir, "Guides/b.md", "# B\n\ntext\n")
    write_doc(kbdir, "guidesx/c.md", "# C\n\ntext\n")
    assert handle.sync()["added"] == 3
    (kbdir / "Guides" / "b.md").write_text("# B\n\nchanged\n", encoding="utf-8")
    res = handle.sync("Guides")
    assert (res["updated"], res["removed"], res["unchanged"]) == (1, 0, 0)
    paths = sorted(d["filepath"] for d in handle.list_docs()["documents"])
    assert paths == ["Guides/b.md", "guides/a.md", "guidesx/c.md"]
