"""A `similarities.json` that sync cannot import is named in `errors` as the index records it (relative to the
knowledge base's parent folder: `similarities.json` beside the root), not by its absolute path, as documents are
named relative to the root."""

from __future__ import annotations


def test_a_bad_similarities_file_is_named_relatively(small):
    handle, kbdir = small
    (kbdir / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    (kbdir.parent / "similarities.json").write_text("{not json", encoding="utf-8")
    (kbdir / "similarities.json").write_text("[1, 2", encoding="utf-8")
    res = handle.sync()
    files = sorted(e["file"] for e in res["errors"])
    assert files == ["knowledge-base/similarities.json", "similarities.json"], res["errors"]
