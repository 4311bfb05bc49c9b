"""A query whose keywords have no related keywords (so no expansion: only exact tags) scores the tagged
documents by their tags' weights, on both engines (on PostgreSQL the exact tags' factors used to be a
column of NULLs, which it reads as text and refused to multiply)."""

from __future__ import annotations

from kb_indexer.api import KnowledgeBase

BODY = "Plain words about gardening tools and their care.\n"


def test_exact_tags_alone_rank_the_tagged_documents(engine_db, tmp_path):
    root = tmp_path / "knowledge-base"
    root.mkdir()
    (root / "trowel.md").write_text("---\nkeywords: [trowel]\n---\n# Trowel\n\n" + BODY)
    (root / "rake.md").write_text("---\nkeywords: [rake]\n---\n# Rake\n\n" + BODY)
    kb, _ = KnowledgeBase.init(engine_db, root)
    try:
        assert kb.sync()["errors"] == []
        found = kb.query("trowel", ["trowel"])["results"]
    finally:
        kb.close()
    assert found[0]["filepath"] == "trowel.md"
    assert found[0]["matched_keywords"] == ["trowel"]
    assert "rake.md" not in [r["filepath"] for r in found if r["matched_keywords"]]
