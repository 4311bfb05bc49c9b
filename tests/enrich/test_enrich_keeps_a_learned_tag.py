"""A keyword `learn` added to a document is not replaced by the same keyword `enrich` generates: the learned
tag keeps its weight and its item, and the next `learn` keeps it (a generated tag is weaker than a learned one;
a person's keyword still replaces a learned one)."""

from __future__ import annotations

import json

import pytest

from kb_indexer.store.documents import GENERATED_TAG_WEIGHT

pytestmark = pytest.mark.both_engines

DOUGH = "# Neapolitan pizza dough\n\nFlour 00, 65% hydration, salt, a pinch of yeast. Knead, rest 24 hours.\n"


def _tag(kb, keyword: str):
    row = kb.conn.execute(
        "SELECT dk.source, dk.weight, dk.learned_id FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
        "JOIN documents d ON d.id = dk.document_id WHERE d.filepath = 'dough.md' AND k.keyword = ?",
        (keyword,)).fetchone()
    return tuple(row) if row else None


def _learned_pizza(small):
    kb, root = small
    (root / "dough.md").write_text(DOUGH, encoding="utf-8")
    (root / "other.md").write_text("# Other\n\nbread\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    for question in ("what hydration for the dough", "how long to rest the dough"):
        qid = kb.query(question, ["pizza"])["query_id"]
        kb.learning.feedback(qid, helpful=["dough.md"])
    kb.learning.learn()
    source, weight, learned_id = _tag(kb, "pizza")
    assert source == "learned" and learned_id is not None
    return kb, root, weight, learned_id


def test_enrich_generating_a_learned_keyword_keeps_the_learned_tag(small):
    kb, root, weight, learned_id = _learned_pizza(small)
    kb.enrich.documents(all_=True, use_llm=False)
    generated = json.loads((root / "dough.keywords.json").read_text(encoding="utf-8"))
    assert "pizza" in [k.lower() for k in generated["keywords"]]   # enrich did write it: the case under test
    assert _tag(kb, "pizza") == ("learned", weight, learned_id)
    relearned = kb.learning.learn()
    assert not [s for s in relearned["suggestions"] if str(s.get("reason", "")).startswith("withdrawn")]
    assert _tag(kb, "pizza") == ("learned", weight, learned_id)
    item = [i for i in kb.learning.learned_list()["learned"] if i["id"] == learned_id][0]
    assert item["status"] == "active" and item["weight"] == weight


def test_a_person_writing_the_learned_keyword_takes_it_over(small):
    kb, root, _, _ = _learned_pizza(small)
    (root / "dough.keywords.json").write_text(json.dumps({"filepath": "dough.md", "summary": "Dough", "keywords": ["pizza"]}),
                                              encoding="utf-8")
    assert kb.sync()["errors"] == []
    source, weight, learned_id = _tag(kb, "pizza")
    assert (source, weight, learned_id) == ("file", 1.0, None)


def test_undoing_the_learned_tag_gives_the_keywords_files_own_back(small):
    """The learned tag kept the row; once it is undone, the next sync gives back the keyword `enrich` wrote."""
    kb, root, _, learned_id = _learned_pizza(small)
    kb.enrich.documents(all_=True, use_llm=False)
    kb.learning.learned_remove([learned_id])
    assert _tag(kb, "pizza") is None
    assert kb.stale()["stale"] is True          # the document is read again by the next sync
    kb.sync()
    assert _tag(kb, "pizza") == ("generated", GENERATED_TAG_WEIGHT, None)
