"""With skill vectors, a skill nearly equivalent to a matched one joins the match (a catalog often has several
skills for one task: ``pdf``, ``pymupdf-pdf``, ``mineru-pdf``); a related skill that is not equivalent, a
neighbour far from the message and a message with no match get none; ``top`` still caps the match.

Real vectors of the real local model (all-MiniLM-L6-v2, numpy encoder); skipped where it is not installed.
"""

from __future__ import annotations

import pytest

from helpers import matched_names as names, synced_skills

from kb_indexer.skills.vectors import model_problem

pytestmark = pytest.mark.skipif(model_problem() is not None, reason=f"the local model: {model_problem()}")

SKILLS = {
    "pdf-text": "Extract the text and tables of PDF files.",
    "pymupdf-reader": "Extract the text and tables of PDF files with PyMuPDF.",
    "pdf-forms": "Fill PDF forms and extract their fields.",
    "weather": "Current conditions and forecasts for any city.",
    "spotify-player": "Play music on Spotify, manage playlists and queue songs.",
    "git-commit": "Write conventional commit messages for staged changes.",
    "samsung-smart-tv": "Control Samsung smart TVs: power, volume, apps.",
    "recipe-finder": "Find cooking recipes from the ingredients you have.",
}
MESSAGE = "extract the tables from this pdf report"


@pytest.fixture
def k(small, tmp_path):
    return synced_skills(small[0], tmp_path / "skills", SKILLS)



def test_without_vectors_only_the_keyword_match(k):
    out = k.skills.match(MESSAGE, use_llm=False)
    assert out["method"] == "keyword" and "pymupdf-reader" not in names(out)


def test_a_near_equivalent_of_the_matched_skill_joins_it_and_says_why(k):
    k.skills.embed()
    out = k.skills.match(MESSAGE, use_llm=False)
    assert names(out)[0] == "pdf-text" and "pymupdf-reader" in names(out)
    assert "pdf-forms" not in names(out)   # related, not equivalent: stays out
    m = next(m for m in out["matched"] if m["name"] == "pymupdf-reader")
    assert m["source"] == "vectors" and m["reason"].startswith("near-equivalent of pdf-text")
    assert out["vectors"]["neighbours"] == ["pymupdf-reader"]


def test_top_caps_the_neighbours_too(k):
    k.skills.embed()
    out = k.skills.match(MESSAGE, top=1, use_llm=False)
    assert names(out) == ["pdf-text"] and out["vectors"]["neighbours"] == []


def test_a_neighbour_far_from_the_message_stays_out(k, monkeypatch):
    from kb_indexer.skills import vectors

    k.skills.embed()
    near = next(m for m in k.skills.match(MESSAGE, use_llm=False)["matched"] if m["name"] == "pymupdf-reader")
    monkeypatch.setattr(vectors, "NEIGHBOUR_MIN_COSINE", near["score"] + 0.01)
    out = k.skills.match(MESSAGE, use_llm=False)
    assert "pymupdf-reader" not in names(out) and out["vectors"]["neighbours"] == []


def test_a_message_with_no_match_gets_no_neighbour(k, monkeypatch):
    from kb_indexer.skills import vectors

    k.skills.embed()
    monkeypatch.setattr(vectors, "MIN_COSINE", 1.0)   # nothing from the cosines' winner either
    out = k.skills.match("pull the words out of this scanned document", use_llm=False)
    assert out["vectors"]["used"] and out["matched"] == [] and out["vectors"]["neighbours"] == []
