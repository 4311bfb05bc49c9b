"""A ``<doc>.keywords.json`` that is a symlink resolving outside the knowledge-base root is not read, as a
document would not be: sync reports it in ``errors`` and indexes the document without it. A symlink that
stays inside the root is read, as for documents."""

from __future__ import annotations

import json

from helpers import write_doc


def _keywords(handle, rel: str) -> list[str]:
    return [k["keyword"] for k in handle.keywords(rel)["keywords"]]


def test_a_keywords_file_linking_outside_the_root_is_refused_and_reported(small, tmp_path):
    handle, kbdir = small
    outside = tmp_path / "elsewhere" / "secret.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"filepath": "a.md", "summary": "from outside", "keywords": ["exfiltrated"]}),
                       encoding="utf-8")
    write_doc(kbdir, "a.md", "---\nkeywords: [mine]\n---\n# Doc A\n\nbody text\n")
    (kbdir / "a.keywords.json").symlink_to(outside)
    res = handle.sync()
    assert res["added"] == 1
    assert [e["file"] for e in res["errors"]] == ["a.keywords.json"]
    assert "outside the knowledge-base root" in res["errors"][0]["message"]
    assert _keywords(handle, "a.md") == ["mine"]                      # its front matter, not the outside file
    assert handle.show("a.md")["summary"] != "from outside"
    assert handle.search(["exfiltrated"])["results"] == []
    # reported by every sync while it is there, and the stale check does not count it again and again
    assert [e["file"] for e in handle.sync()["errors"]] == ["a.keywords.json"]
    assert handle.stale()["stale"] is False


def test_a_keywords_file_linking_inside_the_root_is_read(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# Doc A\n\nbody text\n")
    shared = kbdir / "meta" / "a.json"
    shared.parent.mkdir()
    shared.write_text(json.dumps({"filepath": "a.md", "summary": "s", "keywords": ["inside"]}), encoding="utf-8")
    (kbdir / "a.keywords.json").symlink_to(shared)
    res = handle.sync()
    assert res["errors"] == [] and _keywords(handle, "a.md") == ["inside"]
