"""`kbindex suggest-similarities` on a tiny corpus with known abbreviations: suggestions with context and
evidence, --output in the similarities.json format, --apply as learned items that can be undone."""

from __future__ import annotations

import json

import pytest

from fake_llm import FakeBackend
from helpers import kw, write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.enrich.suggest import initials_match
from kb_indexer.llm.config import LLMOptions, resolve
from kb_indexer.llm.structured import LLMClient


@pytest.fixture
def kbase(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "rl.md", "# RL\n\nReinforcement Learning (RL) trains agents. Deep RL uses networks.\n",
              kw("rl", "RL", "agents", "rewards"))
    write_doc(root, "rl2.md", "# More\n\nAn RL (reinforcement learning) agent maximises rewards.\n",
              kw("more", "RL", "agents", "rewards"))
    write_doc(root, "nlp.md", "# NLP\n\nNatural Language Processing (NLP) parses text. Part of speech (POS) "
                              "tags words.\n", kw("nlp", "natural language processing", "NLP"))
    write_doc(root, "misc.md", "# Misc\n\nThe World Health Organization (WHO) and a random (XYZ) aside.\n")
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    assert handle.sync()["errors"] == []
    yield handle
    handle.close()


def test_initials_match():
    assert initials_match("RL", ["Reinforcement", "Learning"]) == ["Reinforcement", "Learning"]
    assert initials_match("POS", ["Part", "of", "speech"]) == ["Part", "of", "speech"]
    assert initials_match("XYZ", ["a", "random"]) is None
    assert initials_match("GANs", ["generative", "adversarial", "networks"]) is not None


def _pairs(out):
    return {(s["keyword1"], s["keyword2"].lower(), s["type"]): s for s in out["suggestions"]}


def test_abbreviations_and_co_occurrence_with_context_and_evidence(kbase):
    out = kbase.enrich.suggest_similarities(min_score=0.3)
    pairs = _pairs(out)
    rl = pairs[("RL", "reinforcement learning", "abbreviation")]
    assert rl["source"] == "pattern" and rl["evidence"]["count"] == 2 and rl["score"] == 0.9
    assert "Reinforcement Learning (RL)" in rl["context"] or "RL (reinforcement learning)" in rl["context"]
    assert ("POS", "part of speech", "abbreviation") in pairs and ("WHO", "world health organization",
                                                                    "abbreviation") in pairs
    assert not any(k[0] == "XYZ" for k in pairs)
    co = pairs[("agents", "rewards", "related_concept")]
    assert co["source"] == "co-occurrence" and co["evidence"]["shared_documents"] == 2
    assert out["llm"]["used"] is False


def test_output_file_is_importable_and_apply_can_be_undone(kbase, tmp_path):
    target = tmp_path / "suggested.json"
    out = kbase.enrich.suggest_similarities(output=target)
    data = json.loads(target.read_text(encoding="utf-8"))
    assert len(data["similarities"]) == out["count"] and set(data["similarities"][0]) == {
        "keyword1", "keyword2", "type", "context", "score", "directional"}
    applied = kbase.enrich.suggest_similarities(apply=True)
    assert applied["applied"] == applied["count"] > 0
    items = kbase.learning.learned_list("similarity")["learned"]
    assert len(items) == applied["count"] and items[0]["key"].startswith("suggestion:")
    assert kbase.similar("RL")["count"] >= 1
    assert kbase.enrich.suggest_similarities()["count"] == 0          # applied pairs are known now
    kbase.learning.learned_remove(all_=True)
    assert kbase.similar("RL")["count"] == 0
    again = kbase.enrich.suggest_similarities(apply=True)             # suggested again, but not re-applied
    assert again["count"] == applied["count"] and again["applied"] == 0
    kbase.import_similarities(str(target))                    # the --output file is a valid similarities file
    assert kbase.similar("RL")["count"] >= 1


def test_llm_relations_are_validated_against_the_group(kbase):
    fake = FakeBackend([{"relations": [
        {"keyword1": "agents", "keyword2": "rewards", "type": "broader", "context": "In RL.", "score": 0.7},
        {"keyword1": "agents", "keyword2": "martians", "type": "synonym", "context": "No.", "score": 0.9}]},
        {"relations": [{"keyword1": "RL", "keyword2": "agents", "type": "synonym", "context": "x", "score": 0.2}]}])
    client = LLMClient(resolve(LLMOptions(backend="fake", retries=0)), conn=kbase.conn, backend=fake,
                       sleep=lambda s: None)
    out = kbase.enrich.suggest_similarities(client=client, min_score=0.1)
    llm = [s for s in out["suggestions"] if s["source"] == "llm"]
    assert [(s["keyword1"], s["keyword2"], s["type"]) for s in llm] == [("RL", "agents", "synonym")]
    assert len(fake.calls) == 2 and out["llm"]["used"] is True  # the first answer was repaired


def test_co_occurrence_alone_scores_below_a_person_s_relations(kbase):
    from kb_indexer.enrich.suggest import CO_MAX

    co = [s for s in kbase.enrich.suggest_similarities(min_score=0.0)["suggestions"] if s["source"] == "co-occurrence"]
    e = co[0]["evidence"]   # the best: two keywords on exactly the same documents (Jaccard 1)
    assert e["shared_documents"] == e["documents_a"] == e["documents_b"] and co[0]["score"] == CO_MAX == 0.6
    assert max(s["score"] for s in co) <= CO_MAX


def test_documents_with_very_many_keywords_make_a_bounded_number_of_pairs(tmp_path):
    """Every pair of a document's keywords was counted, and its context sentence looked up: two documents with
    1,500 keywords each took 44 s, 3.4 GB and wrote 400 MB. A document contributes its MAX_PAIR_TAGS rarest
    keywords to co-occurrence now."""
    from kb_indexer.enrich.suggest import MAX_PAIR_TAGS

    root = tmp_path / "kb"
    many = [f"kw{i}" for i in range(400)]
    for name in ("a.md", "b.md"):
        write_doc(root, name, "# X\n\ntext\n", kw("x", *many))
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    assert handle.sync()["errors"] == []
    co = [s for s in handle.enrich.suggest_similarities(min_score=0.0, use_llm=False)["suggestions"]
          if s["source"] == "co-occurrence"]
    handle.close()
    assert 0 < len(co) <= MAX_PAIR_TAGS * (MAX_PAIR_TAGS - 1) // 2
