"""`kbindex enrich` with a scripted LLM: a valid answer is used (and cached), an invalid one or a timeout
falls back to the statistical extractor, flagged in the file and the JSON."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeBackend
from helpers import write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.llm.base import LLMTimeout
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient

TEXT = ("# Reinforcement learning\n\nReinforcement Learning (RL) trains agents with rewards. Policy gradients and "
        "Q-learning are RL families.\n")
ANSWER = {
    "title": "Reinforcement learning basics",
    "summary": "Agents learn from rewards. Policy gradients and Q-learning are the main families.",
    "questions": ["What is RL?", "Which RL families exist?", "How do agents learn?"],
    "keywords": [{"keyword": k, "category": c} for k, c in [
        ("reinforcement learning", "primary"), ("RL", "abbreviations"), ("agents", "concepts"),
        ("rewards", "concepts"), ("policy gradients", "concepts"), ("Q-learning", "concepts"),
        ("Richard Sutton", "people"), ("gymnasium", "tools"), ("value functions", "concepts"),
        ("exploration", "concepts"), ("RL", "abbreviations")]],
}


@pytest.fixture
def kbase(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "a.md", TEXT)
    write_doc(root, "b.md", TEXT.replace("Reinforcement learning\n", "Second note\n"))
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    handle.sync()
    yield handle
    handle.close()


def _client(kb, *answers):
    fake = FakeBackend(list(answers))
    return LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kb.conn, backend=fake,
                     sleep=lambda s: None), fake


def test_a_valid_answer_is_written_with_title_summary_questions_and_cached(kbase):
    client, fake = _client(kbase, ANSWER)
    out = kbase.enrich.documents(["a.md"], client=client)
    doc = out["documents"][0]
    assert doc["method"] == "llm" and doc["fallback"] is None and doc["model"] == "fake-model"
    assert out["llm"]["used"] is True and out["llm"]["documents"] == 1
    data = json.loads((kbase.kb_root / "a.keywords.json").read_text(encoding="utf-8"))
    assert data["title"] == ANSWER["title"] and data["generated"]["title"] is True
    assert data["summary"] == ANSWER["summary"] and len(data["generated"]["questions"]) == 3
    assert data["keywords"].count("RL") == 1 and "Richard Sutton" in data["categories"]["people"]
    assert kbase.show("a.md")["title"] == ANSWER["title"]
    assert fake.calls[0]["task"] == "enrich_document" and "Q-learning" in fake.calls[0]["messages"][-1]["content"]
    # the same content and model: answered from the cache, no call
    client2, fake2 = _client(kbase)
    again = kbase.enrich.documents(["a.md"], client=client2, force=True)
    assert again["documents"][0]["method"] == "llm" and fake2.calls == []


def test_an_invalid_answer_falls_back_to_statistical_keywords_flagged(kbase):
    bad = dict(ANSWER, keywords=ANSWER["keywords"][:3])  # too few keywords, twice (the repair fails too)
    client, fake = _client(kbase, "not json", bad, ANSWER, ANSWER)
    out = kbase.enrich.documents(["a.md", "b.md"], client=client)
    first, second = out["documents"]
    assert first["method"] == "statistical" and first["fallback"].startswith("LLM failed")
    assert second["method"] == "llm"                         # a bad answer does not stop the run
    data = json.loads((kbase.kb_root / "a.keywords.json").read_text(encoding="utf-8"))
    assert data["generated"]["method"] == "statistical" and data["generated"]["fallback"].startswith("LLM failed")
    assert out["llm"]["fallback"] == "statistical" and out["llm"]["fallback_documents"] == 1


def test_a_timeout_falls_back_for_the_rest_of_the_run(kbase):
    client, fake = _client(kbase, LLMTimeout("slow"), ANSWER)
    out = kbase.enrich.documents(["a.md", "b.md"], client=client)
    assert [d["method"] for d in out["documents"]] == ["statistical", "statistical"]
    assert "slow" in out["documents"][0]["fallback"] and "earlier document" in out["documents"][1]["fallback"]
    assert len(fake.calls) == 1                               # the server is not waited for again
    assert out["llm"]["error"] and out["llm"]["used"] is False


def test_without_a_backend_the_statistical_path_says_why(kbase):
    out = kbase.enrich.documents(["a.md"])
    assert out["documents"][0]["method"] == "statistical"
    assert "no LLM backend configured" in out["llm"]["reason"]
