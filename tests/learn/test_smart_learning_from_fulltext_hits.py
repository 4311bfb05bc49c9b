"""Smart learning: a helpful document the query found by full text alone gets the query's keywords as
learned tags (after the usual two independent queries), which can be listed and undone."""

from __future__ import annotations

from helpers import kw, write_doc
from kb_indexer.api import KnowledgeBase


def _kb(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "tagged.md", "# Tagged\n\nSomething else entirely about chess openings.\n",
              kw("tagged", "reinforcement learning"))
    write_doc(root, "untagged.md", "# Notes\n\nReinforcement learning agents learn from rewards in games.\n")
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    assert handle.sync()["errors"] == []
    return handle


def _ask_and_mark(kb, question: str) -> dict:
    out = kb.query(question)
    hit = next(r for r in out["results"] if r["filepath"] == "untagged.md")
    # "learned": the first question's helpful mark lifts the document for the second, similar one too
    assert hit["sources"] in (["fulltext"], ["fulltext", "learned"])
    assert out["query"]["keywords"] == ["reinforcement learning"]
    kb.learning.feedback(out["query_id"], ["untagged.md"], [])
    return out


def test_a_fulltext_only_helpful_hit_gets_the_query_keyword_as_a_learned_tag(tmp_path):
    with _kb(tmp_path) as kb:
        _ask_and_mark(kb, "reinforcement learning rewards")
        assert [i for i in kb.learning.learn()["suggestions"] if i["kind"] == "keyword"] == []  # one query: not yet
        _ask_and_mark(kb, "how do reinforcement learning agents learn")
        learned = kb.learning.learn()
        tags = [i for i in learned["suggestions"] if i["kind"] == "keyword"]
        assert [(t["filepath"], t["keyword"]) for t in tags] == [("untagged.md", "reinforcement learning")]
        assert "full text only" in tags[0]["reason"]
        assert kb.search(["reinforcement learning"])["total"] == 2
        item = next(i for i in kb.learning.learned_list("keyword")["learned"] if i["detail"]["keyword"] == "reinforcement learning")
        kb.learning.learned_remove([item["id"]])
        assert [r["filepath"] for r in kb.search(["reinforcement learning"])["results"]] == ["tagged.md"]
        assert [i for i in kb.learning.learn(reprocess=True)["suggestions"] if i["kind"] == "keyword"] == []  # not again
