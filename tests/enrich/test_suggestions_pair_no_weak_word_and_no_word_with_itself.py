"""`kbindex suggest-similarities` relates keywords that tag the same documents, but not a generated keyword that
says nothing of a topic (``back``, ``adds``: an earlier statistical enrich wrote such words into keywords files,
and ``back`` / ``dent`` was suggested), nor two spellings of one word (``move`` / ``moves``)."""

from __future__ import annotations

import json

from kb_indexer.api import KnowledgeBase
from kb_indexer.enrich.suggest import same_word


def _generated(rel: str, keywords: list[str]) -> str:
    return json.dumps({"filepath": rel, "summary": "", "keywords": keywords,
                       "generated": {"method": "statistical", "keywords": keywords, "source_hash": "0" * 40}})


def test_co_occurrence_leaves_out_weak_generated_keywords_and_inflections(tmp_path):
    root = tmp_path / "kb"
    root.mkdir()
    kws = ["dent", "puller", "back", "adds", "move", "moves"]
    for name in ("door.md", "bumper.md"):
        (root / name).write_text(f"# {name[:-3]}\n\nA dent, a puller; move it back.\n", encoding="utf-8")
        (root / name.replace(".md", ".keywords.json")).write_text(_generated(name, kws), encoding="utf-8")
    (root / "other.md").write_text("# Other\n\nNothing alike.\n", encoding="utf-8")
    k, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    assert k.sync()["errors"] == []
    out = k.enrich.suggest_similarities(min_score=0.0, use_llm=False)
    k.close()
    pairs = {frozenset((s["keyword1"], s["keyword2"])) for s in out["suggestions"] if s["source"] == "co-occurrence"}
    assert frozenset(("dent", "puller")) in pairs
    assert not any(pair & {"back", "adds"} for pair in pairs)
    assert not any(pair == {"move", "moves"} for pair in pairs)


def test_two_spellings_of_one_word():
    assert same_word("move", "moves") and same_word("Queries", "query") and same_word("box", "boxes")
    assert not same_word("dent", "puller") and not same_word("ten", "tens-digit")
