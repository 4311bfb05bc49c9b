"""The keyword skill matcher: whole tokens, a minimum score, nothing for messages no skill serves."""

from __future__ import annotations


import pytest

from helpers import write_skills, matched_names as names

from kb_indexer.errors import UsageError, ValidationError
from kb_indexer.skills.terms import tokens

SKILLS = {
    "art-gallery": "Browse paintings and art exhibitions in museums.",
    "samsung-smart-tv": "Control Samsung smart TVs: power, volume, apps.",
    "spotify-player": "Play music on Spotify, manage playlists and queue songs.",
    "snake_case_tools": "Convert identifiers between naming conventions.",
    "crypto-gold-monitor": "监控黄金和白银价格走势 (gold and silver price monitor).",
    "self-love-confidence": "Daily affirmations for confidence.",
    "weather": "Weather forecast for any city.",
    "pdf-forms": "Fill PDF forms.",
}


@pytest.fixture
def k(small, tmp_path):
    handle, _ = small
    root = write_skills(tmp_path / "skills", SKILLS)
    (root / "pdf-forms" / "SKILL.md").write_text(
        "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\nUse pdftk to flatten an acroform; "
        "check the acroform fields first.\n", encoding="utf-8")
    assert handle.skills.sync([str(root)])["errors"] == []
    return handle



def test_direct_request_matches_with_reason_and_result_shape(k):
    out = k.skills.match("turn off the Samsung TV in the kids' room")
    assert names(out)[0] == "samsung-smart-tv"
    m = out["matched"][0]
    assert m["source"] == "keyword" and m["score"] >= out["min_score"] and "samsung" in m["reason"]
    assert out["method"] == "keyword" and out["fallback_reason"] is None
    assert out["candidates"][0]["name"] == "samsung-smart-tv"
    assert out["query"] == "turn off the Samsung TV in the kids' room"


@pytest.mark.parametrize("message", ["", "   ", "the and of to", "what is it? can you, please", "👍 !!! ???"])
def test_empty_or_stopword_only_input_matches_nothing(k, message):
    out = k.skills.match(message)
    assert out["matched"] == [] and out["candidates"] == []


def test_whole_tokens_only_art_never_matches_start(k):
    assert "art" not in tokens("start the restart, smart apartment")
    out = k.skills.match("start the smartest restart of the apartment", min_score=0)
    assert "art-gallery" not in [c["name"] for c in out["candidates"]]
    assert names(k.skills.match("art exhibitions this weekend")) == ["art-gallery"]


def test_hyphenated_and_snake_case_names_are_split():
    assert tokens("spotify-player snake_case_tools") == tokens("spotify player snake case tools")
    assert len(tokens("spotify-player snake_case_tools")) == 5


@pytest.mark.parametrize("one, other", [("meetings", "meeting"), ("recordings", "recording"), ("settings", "setting"),
                                        ("embeddings", "embedding"), ("APIs", "API"), ("strings", "string"),
                                        ("deployments", "deploying")])
def test_singular_and_plural_give_the_same_token(one, other):
    assert tokens(one) == tokens(other)


def test_a_plural_request_matches_like_the_singular(k):
    assert names(k.skills.match("art exhibitions this weekend")) == names(k.skills.match("art exhibition this weekend"))


def test_one_weak_shared_word_does_not_match(k):
    # "love" is one word of a three-word name; "city" one word of a description
    assert k.skills.match("I love my wife")["matched"] == []
    assert k.skills.match("which city is bigger")["matched"] == []


def test_minimum_score_is_a_threshold(k):
    message = "samsung tv volume"
    best = k.skills.match(message, min_score=0)["matched"][0]["score"]
    assert names(k.skills.match(message, min_score=best)) == ["samsung-smart-tv"]
    assert k.skills.match(message, min_score=best + 0.01)["matched"] == []


def test_top_limits_the_result(k):
    out = k.skills.match("spotify music samsung tv weather forecast", min_score=0, top=2)
    assert len(out["matched"]) <= 2


def test_cjk_does_not_crash_and_can_match(k):
    assert names(k.skills.match("最近黄金和白银的价格走势怎么样？")) == ["crypto-gold-monitor"]
    assert k.skills.match("안녕하세요! 오늘 기분 어때요?")["matched"] == []


def test_body_counts_with_a_lower_weight(k):
    out = k.skills.match("flatten the acroform", min_score=0)
    assert names(out) == ["pdf-forms"] and "acroform (body)" in out["matched"][0]["reason"]
    in_description = k.skills.match("fill the forms", min_score=0)["matched"][0]
    assert in_description["name"] == "pdf-forms" and in_description["score"] > out["matched"][0]["score"]


def test_fts_syntax_and_quotes_are_plain_text(k):
    out = k.skills.match('"spotify" AND NOT music* OR (name:player) NEAR/2 -queue')
    assert names(out)[0] == "spotify-player"


def test_bad_arguments(k):
    with pytest.raises(UsageError):
        k.skills.match("tv", top=0)
    with pytest.raises(UsageError):
        k.skills.match("tv", min_score=-1)
    with pytest.raises(ValidationError):
        k.skills.match("bad \udcff bytes")


def test_resync_changes_what_matches(k, tmp_path):
    root = tmp_path / "skills"
    (root / "weather" / "SKILL.md").write_text("---\nname: weather\ndescription: Tide tables for harbours.\n---\n",
                                               encoding="utf-8")
    k.skills.sync()
    assert names(k.skills.match("tide tables for the harbour")) == ["weather"]


def test_a_sync_by_another_connection_is_seen_by_the_next_match(k, tmp_path):
    from kb_indexer.api import KnowledgeBase

    assert k.skills.match("tide tables for the harbour")["matched"] == []
    root = tmp_path / "skills"
    (root / "tides").mkdir()
    (root / "tides" / "SKILL.md").write_text("---\nname: tides\ndescription: Tide tables for harbours.\n---\n",
                                             encoding="utf-8")
    with KnowledgeBase.open(k.db_path) as other:
        assert other.skills.sync()["added"] == ["tides"]
    assert names(k.skills.match("tide tables for the harbour")) == ["tides"]


def test_a_message_naming_a_whole_skill_name_needs_half_the_minimum_score(k):
    from kb_indexer.skills.match import NAMED_CUT

    def score(message):
        return {c["name"]: c["score"] for c in k.skills.match(message, min_score=0)["candidates"]}["spotify-player"]

    named = score("open the spotify player")   # every word of the name
    assert names(k.skills.match("open the spotify player", min_score=named / NAMED_CUT * 0.99)) == ["spotify-player"]
    assert names(k.skills.match("open the spotify player", min_score=named / NAMED_CUT * 1.01)) == []
    unnamed = score("queue songs on spotify")  # part of the name only: the minimum applies in full
    assert names(k.skills.match("queue songs on spotify", min_score=unnamed * 1.01)) == []
    assert names(k.skills.match("queue songs on spotify", min_score=unnamed * 0.99)) == ["spotify-player"]
