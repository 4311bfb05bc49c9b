"""A question naming a note's file (`retry-policy.md`, `where is sourdough.md`) finds that note: the name
without `.md` is searched as a phrase beside the whole name (the whole name alone matched no text: "md" is in
no note). Other file names (`config.py`) are searched as written."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines


@pytest.fixture
def notes(small):
    kb, root = small
    (root / "retry-policy.md").write_text("# Retry policy\n\nWe retry three times with backoff.\n", encoding="utf-8")
    (root / "kitchen").mkdir()
    (root / "kitchen" / "sourdough.md").write_text("Feed the starter daily.\n", encoding="utf-8")
    (root / "config.md").write_text("# Settings\n\nThe loader reads config.py first.\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    return kb


@pytest.mark.parametrize("question, expected", [
    ("retry-policy.md", "retry-policy.md"),
    ("where is retry-policy.md", "retry-policy.md"),
    ("sourdough.md", "kitchen/sourdough.md"),          # a note without a heading: its title is its file name
    ("kitchen/sourdough.md", "kitchen/sourdough.md"),
    ("config.py", "config.md"),                        # a code file's name: found where the text names it
])
def test_the_named_note_comes_first(notes, question, expected):
    out = notes.query(question, options=QueryOptions(record=False))
    assert out["results"] and out["results"][0]["filepath"] == expected
