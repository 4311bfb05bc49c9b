"""After the first sync of a freshly written knowledge base, the quick stale check does not list every folder.

A folder whose mtime is within ``SETTLE_NS`` of the sync's walk may hide a file added in the same mtime
tick after it was listed, so the quick check lists it again. Sync looks at such folders once more when
that window has passed (a long sync): a folder found unchanged is recorded as settled, and the queries
after it take the quick path (no folder listed) instead of re-walking every folder until a second sync.
"""

from __future__ import annotations

import os
import time

import pytest

from kb_indexer.index import stale as stale_mod
from kb_indexer.index import sync as _sync  # noqa: F401 - imported now: the walk starts right after the writes

SETTLE_NS = 500_000_000  # a shorter window keeps the test quick; the rule is the same as with 2 s


@pytest.fixture
def fresh(project, monkeypatch):
    """(KnowledgeBase, folders) over the bundled KB copy, checked as a large knowledge base is (the quick
    check)."""
    from kb_indexer.api import KnowledgeBase

    monkeypatch.setattr(stale_mod, "FULL_CHECK_MAX_FILES", 0)
    monkeypatch.setattr(stale_mod, "SETTLE_NS", SETTLE_NS)
    root = project / "knowledge-base"
    handle, _ = KnowledgeBase.init(project / "kbindex.db", root)
    yield handle, [root] + [p for p in root.rglob("*") if p.is_dir()]
    handle.close()


def just_written(folders) -> int:
    """Every folder written to a moment ago (as right after the KB was generated); returns that time."""
    written = time.time_ns() - 1_000_000
    for folder in folders:
        os.utime(folder, ns=(written, written))
    return written


def wait_past_window(written_ns: int):
    """A sync progress callback that lets the sync end only once the folders' window has passed (as a
    sync of thousands of freshly written documents does by itself)."""
    def progress(done: int, total: int) -> None:
        if done == total:
            while time.time_ns() <= written_ns + SETTLE_NS + 10_000_000:
                time.sleep(0.01)
    return progress


def test_queries_after_the_first_sync_list_no_folder(fresh):
    kb, folders = fresh
    written = just_written(folders)
    result = kb.sync(progress=wait_past_window(written))
    assert result["errors"] == [] and result["added"] > 0
    info = kb.stale()
    assert info["mode"] == "quick" and info["stale"] is False
    assert info["folders"] == len(folders)
    assert info["folders_listed"] == 0
    assert info["folders_compared"] == 0   # settled: not even their names are listed again


def test_a_file_added_in_the_same_tick_after_the_walk_is_still_found(fresh):
    """The second look must not settle a folder that changed after the walk without a new mtime."""
    kb, folders = fresh
    root = kb.kb_root
    written = just_written(folders)
    wait = wait_past_window(written)

    def progress(done: int, total: int) -> None:
        if done == 1:   # after the walk: a file added, its folder's mtime put back (the same tick)
            (root / "hidden-in-the-tick.md").write_text("# Hidden\n\ntext\n", encoding="utf-8")
            os.utime(root, ns=(written, written))
        wait(done, total)

    kb.sync(progress=progress)
    info = kb.stale()
    assert info["stale"] is True and info["added"] == 1
    assert info["examples"] == ["hidden-in-the-tick.md"]
    assert info["folders_listed"] == 1
    kb.sync()
    assert kb.stale()["stale"] is False
