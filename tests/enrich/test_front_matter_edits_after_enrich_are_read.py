"""A note's front matter stays its own after `kbindex enrich` wrote a keywords file for it. The file, which is
read instead of the front matter, starts from the front matter's tags, title and summary; a later edit of
the front matter (a tag added or taken out, a new title) was ignored for good, by sync and by enrich again.
Now the file records what it copied, and both read the copies as the front matter is now; what a person
wrote into the file itself stays."""

from __future__ import annotations

import json

import pytest

from tests.helpers import write_doc

BODY = "# Heading\n\nGamma rays and delta waves meet epsilon noise in the zeta detector. Delta again.\n"


def _note(tags: str, title: str = "Front", extra: str = "") -> str:
    return f"---\ntitle: {title}\ntags: [{tags}]\n{extra}---\n" + BODY


@pytest.fixture
def enriched(small):
    kb, root = small
    write_doc(root, "fm.md", _note("alpha, beta"))
    write_doc(root, "other.md", "# Other\n\nUnrelated words about cooking rice.\n")
    kb.sync()
    kb.enrich.documents(["fm.md"], use_llm=False)
    data = _file(root)
    assert data["keywords"][:2] == ["alpha", "beta"] and data["title"] == "Front"   # it starts from them
    return kb, root


def _file(root) -> dict:
    return json.loads((root / "fm.keywords.json").read_text(encoding="utf-8"))


def _keywords(kb) -> dict[str, str]:
    return {k["keyword"]: k["source"] for k in kb.keywords("fm.md")["keywords"]}


def test_sync_reads_the_front_matter_as_it_is_now(enriched):
    kb, root = enriched
    generated = set(_file(root)["generated"]["keywords"])
    write_doc(root, "fm.md", _note("beta, gamma-ray burst", title="Second"))
    assert kb.sync()["errors"] == []
    tags = _keywords(kb)
    assert "alpha" not in tags and tags["beta"] == "file" and tags["gamma-ray burst"] == "file"
    assert generated and generated <= set(tags)   # the generated keywords stay
    assert kb.show("fm.md")["title"] == "Second"


def test_enrich_again_rewrites_the_copies(enriched):
    kb, root = enriched
    write_doc(root, "fm.md", _note("beta, omega", title="Second"))
    kb.sync()
    kb.enrich.documents(["fm.md"], use_llm=False)
    data = _file(root)
    assert data["keywords"][:2] == ["beta", "omega"] and "alpha" not in data["keywords"]
    assert data["title"] == "Second"
    assert data["generated"]["front_matter"]["keywords"] == ["beta", "omega"]
    assert kb.sync()["errors"] == [] and "alpha" not in _keywords(kb)


def test_what_a_person_wrote_into_the_file_stays(enriched):
    kb, root = enriched
    data = _file(root)
    data["keywords"].append("hand picked")
    data["title"] = "My own title"
    (root / "fm.keywords.json").write_text(json.dumps(data), encoding="utf-8")
    write_doc(root, "fm.md", _note("beta", title="Third"))
    assert kb.sync()["errors"] == []
    tags = _keywords(kb)
    assert tags["hand picked"] == "file" and "alpha" not in tags
    assert kb.show("fm.md")["title"] == "My own title"


def test_a_generated_keyword_put_into_the_front_matter_is_the_persons(enriched):
    kb, root = enriched
    word = _file(root)["generated"]["keywords"][0]
    assert _keywords(kb)[word] == "generated"
    write_doc(root, "fm.md", _note(f"alpha, beta, {word}"))
    assert kb.sync()["errors"] == []
    assert _keywords(kb)[word] == "file"


def test_a_front_matter_that_cannot_be_read_changes_nothing(enriched):
    kb, root = enriched
    before = _keywords(kb)
    write_doc(root, "fm.md", "---\ntitle: Part 1: broken\ntags: [alpha\n---\n" + BODY)
    kb.sync()
    assert _keywords(kb) == before


def test_a_file_without_the_record_is_read_as_it_is(enriched):
    kb, root = enriched
    data = _file(root)
    del data["generated"]["front_matter"]   # as an earlier version wrote it
    (root / "fm.keywords.json").write_text(json.dumps(data), encoding="utf-8")
    write_doc(root, "fm.md", _note("omega"))
    assert kb.sync()["errors"] == []
    tags = _keywords(kb)
    assert "alpha" in tags and "omega" not in tags


def test_the_file_goes_with_its_note(enriched):
    kb, root = enriched
    (root / "fm.md").unlink()
    out = kb.sync()
    assert out["removed"] == 1 and not (root / "fm.keywords.json").exists()
