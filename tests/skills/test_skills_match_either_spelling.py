"""A message spelt the British way matches a skill described the American way, and the other way round;
words both dialects spell alike keep matching their derived forms."""

from __future__ import annotations

import json

import pytest

from helpers import write_skills, matched_names as names, synced_skills

from kb_indexer.skills.terms import VERSION, one_spelling, stem, tokens

SKILLS = {
    "video-digest": "Summarize long videos and organize their key points.",
    "palette-maker": "Pick colour palettes for a brand, with the favourite shades first.",
    "ad-copy": "Advertise products: write an advertisement for social media.",
    "weather": "Weather forecast for any city.",
}


@pytest.fixture
def k(small, tmp_path):
    return synced_skills(small[0], tmp_path / "skills", SKILLS)



@pytest.mark.parametrize("british, american", [
    ("summarise", "summarize"), ("summarised", "summarized"), ("organisations", "organizations"),
    ("analyse", "analyze"), ("analysing", "analyzing"), ("colours", "colors"), ("colourful", "colorful"),
    ("favourite", "favorite"), ("neighbourhood", "neighborhood"), ("cancelled", "canceled"),
    ("modelling", "modeling"), ("centre", "center"), ("catalogue", "catalog"), ("licence", "license"),
    ("programme", "program"),
])
def test_both_spellings_give_one_stem(british, american):
    assert stem(british) == stem(american)


@pytest.mark.parametrize("word, root", [("tokenise", "token"), ("tokenize", "token"), ("normalise", "normal"),
                                        ("normalize", "normal"), ("visualise", "visual"), ("visualize", "visual"),
                                        ("optimise", "optimal"), ("customise", "custom"), ("criticise", "critic")])
def test_either_spelling_of_an_ize_verb_still_matches_its_root(word, root):
    assert stem(word) == stem(root)


@pytest.mark.parametrize("word, derived", [("advertise", "advertisement"), ("supervise", "supervision"),
                                           ("exercise", "exercises"), ("surprise", "surprisingly"),
                                           ("otherwise", "otherwise")])
def test_words_spelt_alike_keep_matching_their_derived_forms(word, derived):
    assert stem(word) == stem(derived)


@pytest.mark.parametrize("word", ["four", "tour", "genre", "programmer", "size", "prize", "citizen", "horizon",
                                  "noise", "colorado"])
def test_other_words_are_left_as_they_are(word):
    assert one_spelling(word) == word


def test_a_british_message_matches_an_american_description(k):
    assert names(k.skills.match("summarise these videos and organise them", use_llm=False)) == ["video-digest"]


def test_an_american_message_matches_a_british_description(k):
    assert names(k.skills.match("show me my favorite colors", use_llm=False)) \
        == ["palette-maker"]


def test_a_message_with_the_root_word_matches_an_ize_description(small, tmp_path):
    k = synced_skills(small[0], tmp_path / "more", {
        "data-viz": "Visualize spreadsheets and datasets as interactive charts.",
        "text-cleanup": "Normalize whitespace and unicode in text files."})
    assert names(k.skills.match("make a visual of this spreadsheet", use_llm=False)) == ["data-viz"]
    assert names(k.skills.match("text is not in normal form", use_llm=False)) == ["text-cleanup"]
    assert names(k.skills.match("visualise this spreadsheet", use_llm=False)) == ["data-viz"]


def test_a_word_spelt_alike_still_matches(k):
    assert names(k.skills.match("advertise my product on social media", use_llm=False)) == ["ad-copy"]


def test_tokens_fold_in_text_too():
    assert tokens("Summarise the colours") == tokens("summarize the colors")


def test_stored_tokens_of_the_older_version_are_written_again_by_sync(k, small, tmp_path):
    handle, _ = small
    handle.conn.execute("UPDATE skills SET terms = ? WHERE name = 'video-digest'",
                        (json.dumps({"v": VERSION - 1, "name": [], "description": [], "body": []}),))
    handle.conn.commit()
    assert names(k.skills.match("summarise these videos and organise them", use_llm=False)) \
        == ["video-digest"]   # recomputed when read
    assert handle.skills.sync()["errors"] == []
    stored = json.loads(handle.conn.execute("SELECT terms FROM skills WHERE name = 'video-digest'").fetchone()[0])
    assert stored["v"] == VERSION and stem("summarise") in stored["description"]


def test_the_cli_matches_either_spelling(tmp_path, run):
    root = write_skills(tmp_path / "skills", SKILLS)
    db = tmp_path / "kbindex.db"
    assert run("init", "--db", db, "--kb", tmp_path / "kb").returncode == 0
    assert run("skills", "sync", root, "--db", db, "--format", "json").returncode == 0
    res = run("skills", "match", "summarise these videos and organise them", "--no-llm", "--db", db,
              "--format", "json")
    assert res.returncode == 0, res.stderr
    assert [m["name"] for m in res.json()["matched"]] == ["video-digest"]
