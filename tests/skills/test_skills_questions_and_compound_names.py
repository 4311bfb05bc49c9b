"""Issue 27 item 12, calibration for unseen messages: a question about the world needs more than a request
for its writer; a name written as one word matches a message writing it as two; evidence made only of words
many skills share needs more than a distinctive word."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import write_skills, matched_names as names

from kb_indexer.api import KnowledgeBase
from kb_indexer.skills import match

pytestmark = pytest.mark.both_engines

SKILLS: dict[str, str | tuple[str, str]] = {
    "stripe": "Stripe payment platform integration. Manage payments, subscriptions, invoices and customers.",
    "icloud-findmy": "Query locations and battery status for family devices via iCloud.",
    "lastfm": "Access listening history, scrobbles and music stats.",
    "post-writer": "Write blog posts and articles in a chosen tone.",
    "thread-writer": "Write threads and posts for social media.",
    "essay-coach": "Write essays with feedback on structure.",
    "weather": "Weather forecast for any city.",
    "samsung-smart-tv": "Control Samsung smart TVs: power, volume, apps.",
}


@pytest.fixture
def k(small: tuple[KnowledgeBase, Path], tmp_path: Path) -> KnowledgeBase:
    handle, _ = small
    assert handle.skills.sync([str(write_skills(tmp_path / "skills", SKILLS))])["errors"] == []
    return handle



@pytest.mark.parametrize("message", ["who founded Stripe?", "why is it called Stripe",
                                     "¿Stripe se fundó en Irlanda?"])
def test_a_question_about_the_world_naming_a_skill_matches_nothing(k: KnowledgeBase, message: str) -> None:
    assert names(k.skills.match(message)) == []
    assert match.impersonal_question(message)


@pytest.mark.parametrize("message", ["show my Stripe invoices", "what's on my Stripe account?",
                                     "Stripe: refund the last payment", "can you list the Stripe payouts?",
                                     "which Stripe payouts failed? please check"])
def test_a_request_for_the_writer_naming_the_same_skill_matches(k: KnowledgeBase, message: str) -> None:
    assert names(k.skills.match(message)) == ["stripe"]
    assert not match.impersonal_question(message)


@pytest.mark.parametrize("message", ["what is the weather forecast for Lisbon?",
                                     "what's the weather forecast for Paris tomorrow"])
def test_a_question_about_the_world_a_skill_answers_still_gets_it(small: tuple[KnowledgeBase, Path],
                                                                  tmp_path: Path, message: str) -> None:
    """Only a single shared word (a name dropped into trivia) needs the question factor: a question that
    shares two words with a skill's description ("weather", "forecast") is a task for it (the chat test
    of kbindex's own skills caught the first version of the rule refusing it)."""
    handle, _ = small
    skills = {"weather-report": ("Get the weather forecast for a city.", "Call the forecast API.")}
    assert handle.skills.sync([str(write_skills(tmp_path / "skills", skills))])["errors"] == []
    assert match.impersonal_question(message)
    assert names(handle.skills.match(message)) == ["weather-report"]


def test_the_question_factor_is_the_only_difference(k: KnowledgeBase) -> None:
    question, request = "who founded Stripe?", "stripe for me"
    assert k.skills.match(question, min_score=0)["candidates"][0]["score"] == \
        k.skills.match(request, min_score=0)["candidates"][0]["score"]
    assert names(k.skills.match(request)) == ["stripe"] and names(k.skills.match(question)) == []


def test_two_words_written_as_one_in_a_name_match(k: KnowledgeBase) -> None:
    out = k.skills.match("where is my daughter's phone on Find My, check its battery")
    assert names(out) == ["icloud-findmy"] and "findmi (name)" in out["matched"][0]["reason"]
    assert "lastfm" in k.skills.match("what did I play most on last.fm this year")["terms"]


def test_compounds_no_skill_has_are_not_terms(k: KnowledgeBase) -> None:
    assert k.skills.match("the and of to")["terms"] == []
    assert k.skills.match("thank you very much")["matched"] == []


def test_evidence_with_no_distinctive_word_needs_the_common_factor(k: KnowledgeBase) -> None:
    message = "write posts"   # both words are shared by several skills of this catalog

    def best(m: str) -> float:
        return float(k.skills.match(m, min_score=0)["candidates"][0]["score"])

    score = best(message)
    assert names(k.skills.match(message, min_score=score / match.COMMON_FACTOR * 0.99)) != []
    assert names(k.skills.match(message, min_score=score / match.COMMON_FACTOR * 1.01)) == []
    distinctive = "samsung tv volume"   # "samsung" is one skill's: the minimum applies as it is
    score = best(distinctive)
    assert names(k.skills.match(distinctive, min_score=score * 0.99)) == ["samsung-smart-tv"]
    assert names(k.skills.match(distinctive, min_score=score * 1.01)) == []
