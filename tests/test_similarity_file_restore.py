"""A similarities file that is deleted and restored brings its relations back (issue 8 item 1)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def _relation_count(kb):
    return kb.conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0]


def test_deleting_and_restoring_the_file_brings_its_relations_back(kb, project):
    path = project / "similarities.json"
    before = _relation_count(kb)
    assert before > 0
    saved = path.read_bytes()
    path.unlink()
    kb.sync()
    assert _relation_count(kb) == 0
    assert kb.conn.execute("SELECT COUNT(*) FROM similarity_file_entries").fetchone()[0] == 0
    path.write_bytes(saved)
    res = kb.sync()
    assert res["similarities"]["files"] == 1
    assert _relation_count(kb) == before
