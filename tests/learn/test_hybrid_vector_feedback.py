"""Hybrid vector feedback: after a first fusion, the question's vector moves toward its best documents, so a
document that shares their subject but not the question's words climbs above one that shares a word only
(deterministic fake-embed backend: bag of words hashed into buckets, tests/fake_llm.py)."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.llm.config import EmbedOptions
from kb_indexer.search import semantic
from tests.helpers import write_doc

FAKE = EmbedOptions(backend="fake-embed", model="fake-embed-256")
ENGINE = "crankshaft camshaft injector gasket cylinder valve flywheel carburettor manifold throttle"
GARDEN = ("tulips roses soil compost mulch hedge lawn shed rake spade seeds bulbs daisies ferns moss ivy "
          "pond gravel trellis orchard").split()
DOCS = {
    **{f"engine{i}.md": f"# Engine {i}\n\npistons {ENGINE} part{i}\n" for i in range(5)},
    "overhaul.md": f"# Overhaul\n\n{ENGINE} torque\n",                  # the subject, none of the words
    "garden.md": "# Garden\n\npistons " + " ".join(GARDEN * 6) + "\n",   # a word, not the subject
    **{f"other{i}.md": f"# Other {i}\n\nbread flour yeast oven dough{i}\n" for i in range(6)},
}


@pytest.fixture
def engines(small):
    kb, root = small
    for name, text in DOCS.items():
        write_doc(root, name, text)
    assert kb.sync()["errors"] == []
    kb.embeddings.embed(embed=FAKE)
    return kb


def position(paths, name):
    return paths.index(name) if name in paths else len(paths)   # not found: below every result


def ranked(kb):
    out = kb.query("pistons", options=QueryOptions(method="hybrid", record=False), embed=FAKE)
    assert out["semantic"]["used"] is True
    return [r["filepath"] for r in out["results"]]


def test_a_document_on_the_subject_of_the_best_matches_outranks_one_sharing_only_a_word(engines):
    paths = ranked(engines)
    assert position(paths, "overhaul.md") < position(paths, "garden.md") < len(paths)


def test_without_vector_feedback_the_shared_word_wins(engines, monkeypatch):
    monkeypatch.setattr(semantic, "VECTOR_FB_DOCS", 0)
    paths = ranked(engines)
    assert position(paths, "garden.md") < position(paths, "overhaul.md")

