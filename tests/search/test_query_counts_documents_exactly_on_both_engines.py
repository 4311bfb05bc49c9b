"""The number of documents a question is ranked against (term pruning, pseudo-relevance feedback's minimum, the
sparse index's threshold) is the number the index holds: exact from ``exact_from`` on, on both engines, after
documents are added, emptied, renamed and deleted. On PostgreSQL it is read from the full-text totals the
writes keep (one row), not counted per question."""

from __future__ import annotations

import pytest

from kb_indexer.store import documents

pytestmark = pytest.mark.both_engines


def _counted(kb) -> int:
    return kb.conn.execute("SELECT count(*) FROM documents").fetchone()[0]


def test_the_count_follows_adds_empties_renames_and_deletes(small):
    kb, folder = small
    for i in range(12):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nwind tunnel {i}\n", encoding="utf-8")
    (folder / "empty.md").write_text("", encoding="utf-8")
    assert kb.sync()["errors"] == []
    assert documents.count(kb.conn, 0) == _counted(kb) == 13
    for i in range(4):
        (folder / f"note{i}.md").unlink()
    (folder / "note5.md").rename(folder / "moved.md")
    (folder / "note6.md").write_text("", encoding="utf-8")
    assert kb.sync()["errors"] == []
    assert documents.count(kb.conn, 0) == _counted(kb) == 9


def test_below_exact_from_sqlite_may_answer_the_highest_id(small, index_engine):
    kb, folder = small
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# N {i}\n\nbody {i}\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    (folder / "n0.md").unlink()
    assert kb.sync()["errors"] == []
    expected = 2 if index_engine == "postgres" else 3   # SQLite: max(id), an upper bound, below exact_from
    assert documents.count(kb.conn, 1000) == expected
    assert documents.count(kb.conn, 0) == 2
