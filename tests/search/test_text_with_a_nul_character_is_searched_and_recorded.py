"""A NUL character in a question never makes an error on either engine: the question is searched and recorded
(asked again, it is the same query). (PostgreSQL cannot store NUL in text: it stores U+FFFD there, in what it
writes and what it looks up alike. A document with NUL bytes is refused as binary on both engines.)"""

from __future__ import annotations

from kb_indexer.api import KnowledgeBase


def test_a_question_with_a_nul_is_searched_and_recorded_once(engine_db, tmp_path):
    root = tmp_path / "knowledge-base"
    root.mkdir()
    (root / "odd.md").write_text("# Odd\n\nzebra crossing notes on striped animals\n")
    kb, _ = KnowledgeBase.init(engine_db, root)
    try:
        assert kb.sync()["errors"] == []
        first = kb.query("zebra\x00crossing")
        again = kb.query("zebra\x00crossing")
        assert first["query_id"] == again["query_id"]
        assert "odd.md" in [r["filepath"] for r in first["results"]]
    finally:
        kb.close()
