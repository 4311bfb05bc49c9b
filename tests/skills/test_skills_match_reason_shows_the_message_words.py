"""A keyword skill match's reason names the words as the message wrote them ("retry (body)"), not the stems
it matched on ("retri (body)", which reads as a typo)."""

from __future__ import annotations

import pytest

from helpers import write_skills


@pytest.fixture
def k(small, tmp_path):
    handle, _ = small
    root = write_skills(tmp_path / "skills", {"notes-search": "Search the team's notes."})
    (root / "notes-search" / "SKILL.md").write_text(
        "---\nname: notes-search\ndescription: Search the team's notes.\n---\nFind the retry policy, "
        "deployments and their meetings.\n", encoding="utf-8")
    assert handle.skills.sync([str(root)])["errors"] == []
    return handle


def test_the_reason_uses_the_message_words(k):
    out = k.skills.match("Searching the NOTES about retries and deploying", use_llm=False)
    [m] = out["matched"]
    assert m["reason"].startswith("shared words: ")
    shown = m["reason"].removeprefix("shared words: ").split(", ")
    assert {w.split(" ")[0] for w in shown} >= {"searching", "notes", "retries", "deploying"}
    assert not any(w.split(" ")[0] in ("retri", "deploy", "search") for w in shown)


def test_spellings_map_each_token_to_its_word():
    from kb_indexer.skills.terms import spellings

    assert spellings("Retry the retries, snake_case") == {"retri": "retry", "snake": "snake", "case": "case"}
    assert spellings("") == {}
