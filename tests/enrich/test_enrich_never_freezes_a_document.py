"""What enrich generates is checked by the rule sync applies to keywords files before it is written (a NUL
or another control character, an absurd length): invalid keywords and questions are dropped and said so.
A document whose keywords file is invalid anyway (an older enrich wrote a NUL) is still indexed, with the
problem in sync's ``errors``, and ``enrich --force`` (LLM or not) replaces the generated parts of such a
file; a person's invalid file is left alone."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeBackend
from helpers import write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

pytestmark = pytest.mark.both_engines

TEXT = ("# Reinforcement learning\n\nReinforcement Learning (RL) trains agents with rewards. Policy gradients and "
        "Q-learning are RL families.\n")
GOOD = [("reinforcement learning", "primary"), ("RL", "abbreviations"), ("agents", "concepts"),
        ("rewards", "concepts"), ("policy gradients", "concepts"), ("Q-learning", "concepts"),
        ("Richard Sutton", "people"), ("gymnasium", "tools"), ("value functions", "concepts"),
        ("exploration", "concepts")]
BAD_KEYWORDS = ["nul\u0000byte", "clear\u001b[2Jscreen", "bell\u0007"]
BAD_QUESTIONS = ["What is \u0000 RL?", "Why " + "really " * 80 + "?"]


def _answer(keywords, questions):
    return {"title": "Reinforcement learning basics", "summary": "Agents learn from rewards.",
            "questions": questions, "keywords": [{"keyword": k, "category": c} for k, c in keywords]}


@pytest.fixture
def kbase(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "a.md", "---\nkeywords: [front]\n---\n" + TEXT)
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    handle.sync()
    yield handle
    handle.close()


def _client(kb, *answers):
    return LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kb.conn, backend=FakeBackend(list(answers)),
                     sleep=lambda s: None)


def _file(kb) -> dict:
    return json.loads((kb.kb_root / "a.keywords.json").read_text(encoding="utf-8"))


def _keywords(kb) -> set[str]:
    return {k["keyword"] for k in kb.keywords("a.md")["keywords"]}


def _frozen_file(kb, person: list[str]) -> None:
    """A keywords file as an older enrich wrote it: a generated keyword holding a NUL."""
    generated = ["agents", "bad\u0000keyword"]
    (kb.kb_root / "a.keywords.json").write_text(json.dumps({
        "filepath": "a.md", "summary": "", "keywords": person + generated, "categories": {"concepts": generated},
        "generated": {"method": "llm", "keywords": generated, "title": False, "summary": False, "questions": [],
                      "source_hash": "0" * 40, "fallback": None}}), encoding="utf-8")


def test_invalid_generated_keywords_and_questions_are_dropped_before_writing(kbase):
    client = _client(kbase, _answer(GOOD + [(k, "concepts") for k in BAD_KEYWORDS], ["What is RL?", *BAD_QUESTIONS]))
    doc = kbase.enrich.documents(["a.md"], client=client)["documents"][0]
    assert doc["action"] == "enriched" and doc["method"] == "llm"
    assert len(doc["dropped"]) == 5 and any("NUL" in d for d in doc["dropped"])
    assert any("characters long" in d for d in doc["dropped"])
    data = _file(kbase)
    assert not set(BAD_KEYWORDS) & set(data["keywords"]) and "Richard Sutton" in data["keywords"]
    assert data["generated"]["questions"] == ["What is RL?"]
    # what enrich wrote, sync reads: no error, and a later edit of the document is indexed
    (kbase.kb_root / "a.md").write_text(TEXT + "\nSlipstream drafting.\n", encoding="utf-8")
    res = kbase.sync()
    assert res["errors"] == [] and res["updated"] == 1
    assert [r["filepath"] for r in kbase.search(["Richard Sutton"])["results"]] == ["a.md"]


def test_a_document_with_an_invalid_keywords_file_is_still_indexed_and_the_file_reported(kbase):
    _frozen_file(kbase, ["mine"])
    (kbase.kb_root / "a.md").write_text("---\nkeywords: [front]\n---\n# Edited title\n\nNew words: slipstream.\n",
                                        encoding="utf-8")
    res = kbase.sync()
    assert res["updated"] == 1
    assert [e["file"] for e in res["errors"]] == ["a.keywords.json"] and "NUL" in res["errors"][0]["message"]
    assert kbase.show("a.md")["title"] == "Edited title" and _keywords(kbase) == {"front"}
    assert kbase.stale()["stale"] is False


@pytest.mark.parametrize("llm", [False, True], ids=["no-llm", "llm"])
def test_enrich_force_replaces_the_invalid_generated_parts_and_keeps_a_persons(kbase, llm):
    _frozen_file(kbase, ["mine"])
    assert kbase.sync()["errors"]
    client = _client(kbase, _answer(GOOD, ["What is RL?", "Who?", "How?"])) if llm else None
    out = kbase.enrich.documents(["a.md"], force=True, use_llm=llm, client=client)
    doc = out["documents"][0]
    assert doc["action"] == "enriched" and doc["method"] == ("llm" if llm else "statistical")
    assert "NUL" in doc["replaced_invalid"]
    data = _file(kbase)
    assert "mine" in data["keywords"] and "bad\u0000keyword" not in data["keywords"]
    assert "mine" not in data["generated"]["keywords"]
    assert kbase.sync()["errors"] == [] and "mine" in _keywords(kbase)


def test_a_persons_invalid_keywords_file_is_never_overwritten(kbase):
    path = kbase.kb_root / "a.keywords.json"
    body = json.dumps({"filepath": "a.md", "summary": "", "keywords": ["mine\u0000"]})
    path.write_text(body, encoding="utf-8")
    doc = kbase.enrich.documents(["a.md"], force=True, use_llm=False)["documents"][0]
    assert doc["action"] == "failed" and "NUL" in doc["error"]
    assert path.read_text(encoding="utf-8") == body


def test_sync_applies_the_same_rule_to_a_persons_keywords_file(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", TEXT, {"summary": "", "keywords": ["fine", "clear\u001b[2Jscreen"]})
    res = handle.sync()
    assert res["added"] == 1 and [e["file"] for e in res["errors"]] == ["a.keywords.json"]
    assert "control character '\\x1b'" in res["errors"][0]["message"]
    assert handle.keywords("a.md")["keywords"] == []
