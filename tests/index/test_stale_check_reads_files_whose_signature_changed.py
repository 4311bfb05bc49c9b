"""The stale check counts a file as changed only when its content changed: a checkout of the same notes at
another path synced into the same index (a team member's), a copy or a `touch` change every file's mtime and
made every query say "the index is out of date: 18 changed". An edit is still found."""

from __future__ import annotations

import os
import shutil

import pytest

pytestmark = pytest.mark.both_engines


def test_another_checkout_synced_leaves_this_one_up_to_date(kb, tmp_path):
    here = kb.kb_root
    other = tmp_path / "alice" / "notes"
    shutil.copytree(here, other)             # new mtimes: every signature differs
    for path in other.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 7_000_000_000))
    from kb_indexer.api import KnowledgeBase

    alice = KnowledgeBase.open(getattr(kb.db_path, "url", kb.db_path), other)
    try:
        assert alice.sync()["updated"] == 0
    finally:
        alice.close()
    assert kb.stale()["stale"] is False and kb.stale_note() is None, kb.stale()["similarities_changed"]
    note = next(here.glob("*.md"))
    note.write_text(note.read_text(encoding="utf-8") + "\nAn edit.\n", encoding="utf-8")
    stale = kb.stale()
    assert stale["stale"] is True and stale["changed"] == 1 and stale["examples"] == [note.name]


def test_a_touched_file_is_not_changed(kb):
    note = next(kb.kb_root.glob("*.md"))
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 5_000_000_000))
    assert kb.stale()["stale"] is False, kb.stale()
