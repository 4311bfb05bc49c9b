"""The crude suffix stem that full-text feedback and the neighbours of the best results count words with: the
longest listed ending that leaves three characters, the same for one word and for many stemmed in one pass."""

from __future__ import annotations

import random

from kb_indexer.search.feedback import stem, stems

CASES = {"learning": "learn", "studies": "stud", "relations": "rel", "sings": "sing", "ably": "ably",
         "quickly": "quick", "tied": "tied", "carried": "carr", "boxes": "box", "gas": "gas", "ions": "ion",
         "naïves": "naïv", "ing": "ing", "": "", "ss": "ss"}


def test_a_word_loses_its_longest_ending_that_leaves_three_characters():
    assert {w: stem(w) for w in CASES} == CASES


def test_many_words_at_once_are_stemmed_as_each_alone():
    rng = random.Random(5)
    endings = ["ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "ly", "", "x"]
    words = ["".join(rng.choice("abcé") for _ in range(rng.randrange(0, 6))) + rng.choice(endings)
             for _ in range(3000)] + list(CASES)
    assert stems(words) == [stem(w) for w in words]
    assert stems([]) == []
