"""Two syncs of one SQLite index at once: the second waits for the first (saying so on stderr) and then finds its
work done, instead of both reading the same starting state and re-indexing what the other added ("added 3000"
and "added 2000" for 3,000 documents). A lock on ``<index>-sync.lock`` beside the index, as PostgreSQL's
advisory lock does for a shared index."""

from __future__ import annotations

import threading

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.index import sync as sync_module
from kb_indexer.store import connection, file_lock


@pytest.mark.sqlite_only("the lock file beside the SQLite index; PostgreSQL has its advisory lock")
def test_the_second_sync_waits_and_finds_the_work_done(small, monkeypatch):
    handle, kbdir = small
    for i in range(30):
        (kbdir / f"d{i}.md").write_text(f"# D{i}\n\nnote {i}\n", encoding="utf-8")
    warned, release = threading.Event(), threading.Event()
    said: list[str] = []

    def note(message: str) -> None:
        said.append(message)
        warned.set()

    monkeypatch.setattr(file_lock, "warn", note)
    results: dict = {}

    def first() -> None:   # the first sync: its work done while it holds the lock
        with KnowledgeBase.open(handle.db_path) as kb, connection.exclusive(kb.conn, "sync"):
            results["first"] = sync_module._sync(kb.conn, kb.kb_root, None, None, False)
            release.wait(60)

    def second() -> None:
        with KnowledgeBase.open(handle.db_path) as kb:
            results["second"] = kb.sync()

    holder = threading.Thread(target=first)
    holder.start()
    while "first" not in results and holder.is_alive():
        holder.join(0.05)
    waiter = threading.Thread(target=second)
    waiter.start()
    assert warned.wait(60), "the second sync never said it waits"
    assert waiter.is_alive() and "another kbindex sync of this index is running" in said[0]
    release.set()
    holder.join(60)
    waiter.join(60)
    assert results["first"]["added"] == 30
    assert (results["second"]["added"], results["second"]["unchanged"]) == (0, 30)
