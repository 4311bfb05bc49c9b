"""Input normalisation (kb_indexer.context.normalise): filler phrases stripped at the start and the end,
"please" anywhere, immediately repeated words collapsed, spaces trimmed; never empty, and the things that
only look like filler or repetition are left alone."""

from __future__ import annotations

import pytest

from kb_indexer.context.normalise import (LEADING_FILLERS, TRAILING_FILLERS, TRAILING_THANKS, normalise,
                                          normalised_pair)

CHANGED = [
    # the design's examples (chat-context-strategy.md)
    ("how about workspace workspace 5", "workspace 5"),
    ("open workspace workspace 5", "open workspace 5"),
    ("how about workspace 12", "workspace 12"),
    # leading filler, repeatedly
    ("can you open the logs", "open the logs"),
    ("could you show me the logs?", "show me the logs?"),
    ("Could you please open workspace 5", "Open workspace 5"),
    ("Hey, can you please open it", "Open it"),
    ("I want to see the report", "See the report"),
    ("let's open workspace 3", "open workspace 3"),
    ("What about the staging cluster?", "The staging cluster?"),
    ("um, uh, open it", "open it"),
    # trailing filler
    ("open workspace 5 please", "open workspace 5"),
    ("open workspace 5, please!", "open workspace 5!"),
    ("open workspace 5, thanks", "open workspace 5"),
    ("Hi, open the report", "Open the report"),
    ("hey can you open X", "open X"),
    ("Is it fixed? thanks", "Is it fixed?"),
    ("Fixed it; thank you", "Fixed it"),
    # "please" anywhere
    ("open please the file", "open the file"),
    ("show the, please, logs", "show the, logs"),
    ("PLEASE open it", "Open it"),
    # repeated words, ignoring case
    ("open the the file", "open the file"),
    ("The the cat", "The cat"),
    ("this is is it", "this is it"),
    ("go go go!", "go!"),
    ("no no no", "no"),
    ("The result is is 0.73", "The result is 0.73"),
    # spaces
    ("  lots   of \t  space  here ", "lots of space here"),
    ("  list:  \n- a   b\n- c\n\n\n\nend ", "list:\n- a b\n- c\n\nend"),      # lines stay lines
    # Unicode: Korean and accented repeated words
    ("워크스페이스 워크스페이스 5", "워크스페이스 5"),
    ("워크스페이스 워크스페이스 워크스페이스 열어줘", "워크스페이스 열어줘"),
    ("été été chaud", "été chaud"),
    ("gruß gruß aus Köln", "gruß aus Köln"),
]

UNCHANGED = [
    "what can you do?",          # "can you" not at the start
    "I am pleased",              # "pleased" is not "please"
    "pleased to meet you",
    "1 1 2 3 5",                 # numbers repeat for a reason
    "call 555 555 1234",
    "Well-known issue",          # a filler inside a hyphenated word
    "so-called fix",
    "run `echo echo` twice",     # code spans are verbatim
    "he had had enough",         # grammatical doublings
    "he said that that was fine",
    "New York New York",         # not immediately repeated
    "Sofa sizes",                # "so" is a prefix, not a word
    "you're you're",             # words with apostrophes are not collapsed
    "open workspace 5",
    "워크스페이스 5 열어줘",
]

NEVER_EMPTY = ["please", "thanks", "Thank you!", "how about", "please please", "can you", "I want to", "hi",
               "Um...", "  please  "]


@pytest.mark.parametrize("text,expected", CHANGED)
def test_filler_and_repetition_are_removed(text, expected):
    assert normalise(text) == expected


@pytest.mark.parametrize("text", UNCHANGED)
def test_things_that_only_look_like_filler_or_repetition_are_kept(text):
    assert normalise(text) == text


@pytest.mark.parametrize("text", NEVER_EMPTY)
def test_a_message_of_nothing_but_filler_is_kept_as_written(text):
    out = normalise(text)
    assert out == " ".join(text.split())
    assert out.strip()


def test_normalising_twice_changes_nothing_more():
    for text, _ in CHANGED:
        once = normalise(text)
        assert normalise(once) == once, text


def test_code_spans_are_never_edited():
    assert normalise("how about `ls ls` now") == "`ls ls` now"
    assert normalise("grep for `please` in the code") == "grep for `please` in the code"
    assert normalise("run `please fix it` now") == "run `please fix it` now"


def test_filler_followed_by_sentence_punctuation_leaves_one_mark():
    assert normalise("Done! Thanks.") == "Done!"
    assert normalise("Open it. Please.") == "Open it."
    assert normalise("ok. thanks!") == "ok."
    assert normalise("open it please!") == "open it!"


def test_a_hyphenated_please_word_is_not_the_filler():
    assert normalise("Please-no is a band") == "Please-no is a band"


def test_a_greeting_made_only_of_filler_is_not_cut_in_half():
    # "hi there" and "hey there" are fillers; "hello there" must not become "There".
    assert normalise("hello there") == "hello there"
    assert normalise("hi there") == "hi there"


def test_capitalisation_follows_the_original_first_letter():
    assert normalise("Please open it") == "Open it"
    assert normalise("please open it") == "open it"


def test_nfc_forms_compare_equal():
    decomposed = "e\u0301te\u0301 e\u0301te\u0301"
    assert normalise(decomposed) == "été"


def test_the_pair_keeps_the_original_beside_the_normalised_text():
    assert normalised_pair("how about workspace workspace 5") == {
        "original": "how about workspace workspace 5", "normalised": "workspace 5"}


def test_the_documented_lists_hold_the_designs_phrases():
    for phrase in ("how about", "please", "can you", "could you", "i want to", "let's"):
        assert phrase in LEADING_FILLERS
    assert "please" in TRAILING_FILLERS and "thanks" in TRAILING_THANKS


def test_blank_text_stays_blank():
    assert normalise("   ") == ""


# Words that look like fillers but carry meaning where they stand: unchanged.
MEANINGFUL = [
    "Well done", "Well said", "so what?", "hello world", "type thanks", "is this good for me",
    "open workspace 5 thanks", "hi-fi speakers", "Let's Encrypt certificates", "can you not do that?",
    "ok", "okay", "I wanna die", "uh huh", "Let us know when ready", "what about it?",
    "Would you rather be rich or famous?", "so so", "Bora Bora trip", "Duran Duran concert",
    "fix this:\n```python\nfor x in xs:\n    print(x)\n```",
]


@pytest.mark.parametrize("text", MEANINGFUL)
def test_filler_like_words_that_carry_meaning_stay(text):
    assert normalise(text) == text
