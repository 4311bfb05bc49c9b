"""A similarities file that is deleted and restored brings its relations back (issue 8 item 1). A sync of a
checkout without the file (a team member's clone, a branch) keeps the relations only it lists, with the score
changes learned on them, and says so; `sync --force` forgets them."""

from __future__ import annotations

import pytest

from kb_indexer.store.connection import transaction

pytestmark = pytest.mark.both_engines


def _relation_count(kb):
    return kb.conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0]


def test_deleting_and_restoring_the_file_brings_its_relations_back(kb, project):
    path = project / "similarities.json"
    before = _relation_count(kb)
    assert before > 0
    saved = path.read_bytes()
    path.unlink()
    res = kb.sync(force=True)
    assert res["similarities"]["removed"] == before and res["warnings"] == []
    assert _relation_count(kb) == 0
    assert kb.conn.execute("SELECT COUNT(*) FROM similarity_file_entries").fetchone()[0] == 0
    path.write_bytes(saved)
    res = kb.sync()
    assert res["similarities"]["files"] == 1
    assert _relation_count(kb) == before


def test_a_sync_without_the_file_keeps_its_relations_and_says_how_to_forget_them(kb, project):
    path = project / "similarities.json"
    before = _relation_count(kb)
    saved = path.read_bytes()
    path.unlink()
    res = kb.sync()
    assert res["similarities"]["removed"] == 0 and _relation_count(kb) == before
    [warning] = res["warnings"]
    assert warning["file"] == "similarities.json"
    assert f"the {before} relations only it lists are kept" in warning["message"]
    assert "kbindex sync --force" in warning["message"]
    stale = kb.stale()
    assert stale["stale"] is True and any("similarities.json" in f for f in stale["similarities_changed"])
    path.write_bytes(saved)
    res = kb.sync()
    assert res["warnings"] == [] and _relation_count(kb) == before and kb.stale()["stale"] is False


def test_a_learned_score_change_survives_a_checkout_without_the_file(kb, project):
    rel = kb.conn.execute("SELECT id, score FROM keyword_similarities ORDER BY id").fetchone()
    with transaction(kb.conn):   # as `learn` adjusts a file's relation (kb_indexer.learn.apply._apply_score)
        kb.conn.execute("UPDATE keyword_similarities SET score = ? WHERE id = ?", (rel[1] - 0.05, rel[0]))
    path = project / "similarities.json"
    saved = path.read_bytes()
    path.unlink()
    kb.sync()
    path.write_bytes(saved)
    kb.sync()
    assert tuple(kb.conn.execute("SELECT id, score FROM keyword_similarities WHERE id = ?", (rel[0],)).fetchone()) \
        == (rel[0], pytest.approx(rel[1] - 0.05))


def _checkout(base, name: str):
    root = base / name
    root.mkdir(parents=True)
    (root / "a.md").write_text("# Kubernetes\n\nKubernetes pods crash.\n", encoding="utf-8")
    (root / "similarities.json").write_text(
        '{"similarities": [{"keyword1": "k8s", "keyword2": "kubernetes", "type": "abbreviation", '
        '"context": "k8s is Kubernetes", "score": 1.0}, {"keyword1": "pod", "keyword2": "container group", '
        '"type": "synonym", "context": "a pod", "score": 0.9}]}', encoding="utf-8")
    return root


def test_two_checkouts_with_other_folder_names_keep_their_relations(small, tmp_path):
    """The similarities file inside each checkout's root has another name in the index (`kb/...`, `team-kb/...`):
    the other checkout's listing is not "gone" for this one, so neither sync removes the other's, no warning
    repeats, and `sync --force` (this checkout's files are the truth) still leaves this file's relations."""
    from kb_indexer.api import KnowledgeBase

    kb, _ = small
    db = getattr(kb.db_path, "url", kb.db_path)
    cron = KnowledgeBase.open(db, _checkout(tmp_path / "srv", "kb"))
    bob = KnowledgeBase.open(db, _checkout(tmp_path / "bob", "team-kb"))
    try:
        assert cron.sync()["similarities"]["imported"] == 2
        assert bob.sync()["warnings"] == []
        again = cron.sync()
        assert again["warnings"] == [] and again["similarities"]["removed"] == 0
        assert _relation_count(cron) == 2
        forced = cron.sync(force=True)
        assert _relation_count(cron) == 2 and forced["warnings"] == []
        assert cron.stale()["stale"] is False
    finally:
        cron.close()
        bob.close()
