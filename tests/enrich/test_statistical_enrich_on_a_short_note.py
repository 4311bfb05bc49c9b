"""The statistical enrich on a short note: no words that only say what kind of text it is ("notes",
"overview") or how something is done ("appropriately"), and a summary made of the note's first sentences
(not an empty one) that a person's summary or an LLM's still replaces."""

from __future__ import annotations

import json

from kb_indexer.enrich.keyphrases import lead_summary

NOTE = """# Learning rate notes

Set the learning rate appropriately: start at 3e-4 for Adam and decay it with a cosine schedule. Warm up
for the first 1000 steps to keep early training stable. Watch the loss curve carefully.

## Overview

Smaller batches usually need a smaller rate.
"""


def test_a_short_note_gets_topic_words_and_its_first_sentences(small):
    k, root = small
    (root / "lr.md").write_text(NOTE, encoding="utf-8")
    assert k.sync()["errors"] == []
    out = k.enrich.documents(["lr.md"], use_llm=False)
    doc = out["documents"][0]
    assert doc["action"] == "enriched"
    words = set(doc["generated_keywords"])
    assert {"adam", "cosine", "decay"} <= words
    assert not words & {"notes", "overview", "appropriately", "carefully", "usually"}
    assert doc["summary"] == ("Set the learning rate appropriately: start at 3e-4 for Adam and decay it with a "
                              "cosine schedule. Warm up for the first 1000 steps to keep early training stable.")
    written = json.loads((root / "lr.keywords.json").read_text(encoding="utf-8"))
    assert written["summary"] == doc["summary"]
    assert k.show("lr.md")["summary"] == doc["summary"]


def test_a_persons_summary_is_kept(small):
    k, root = small
    (root / "lr.md").write_text("---\nsummary: Mine.\n---\n" + NOTE, encoding="utf-8")
    assert k.sync()["errors"] == []
    doc = k.enrich.documents(["lr.md"], use_llm=False)["documents"][0]
    assert k.show("lr.md")["summary"] == "Mine."
    assert doc["summary"] == "Mine."


def test_the_lead_is_at_most_two_sentences_and_clipped_at_a_word():
    assert lead_summary("One. Two! Three?") == "One. Two!"
    assert lead_summary(None) == ""
    long = "word " * 100
    clipped = lead_summary(long)
    assert clipped.endswith("…") and len(clipped) <= 301 and " wor…" not in clipped
