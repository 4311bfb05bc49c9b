"""The chat's ``kb_similar`` tool tells the model each related keyword's relation type (synonym,
abbreviation, broader, ...), as the API gives it, on a real index."""

from __future__ import annotations

from kb_indexer.chat.tools import run_tool


def test_each_related_keyword_comes_with_its_relation_type(kb):
    expected = kb.similar("reinforcement learning")["similar_keywords"]
    assert expected, "the bundled knowledge base relates this keyword"
    text, info = run_tool(kb, "kb_similar", {"keyword": "reinforcement learning"})
    assert info["ok"] is True
    lines = text.splitlines()
    assert len(lines) == min(20, len(expected))
    for line, item in zip(lines, expected):
        assert line == f"- {item['keyword']} ({item['similarity_type']}, {item['score']})"
    assert "None" not in text
