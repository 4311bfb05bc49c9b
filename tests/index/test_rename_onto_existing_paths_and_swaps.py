"""A file renamed over another document's file, or two files that swap names, move their documents'
identities with their texts (learned items, feedback, keywords follow the text, not the path). Rules:
kb_indexer.index.renames."""

from __future__ import annotations

import os

import pytest

from helpers import write_doc

pytestmark = pytest.mark.both_engines


def _setup(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# Alpha\n\nfirst note about kites and strings\n")
    write_doc(kbdir, "b.md", "# Beta\n\nsecond note about gliders and thermals\n")
    write_doc(kbdir, "c.md", "# Gamma\n\nthird note about balloons\n")
    handle.sync()
    for question, keyword, target in [("kites strings", "kiteflying", "a.md"),
                                      ("kite strings tension", "kiteflying", "a.md"),
                                      ("gliders thermals", "soaring", "b.md"),
                                      ("glider thermal lift", "soaring", "b.md")]:
        res = handle.query(question, [keyword])
        others = [r["filepath"] for r in res["results"] if r["filepath"] != target][:1]
        handle.learning.feedback(res["query_id"], [target], others)
    assert handle.learning.learn()["applied"]
    return handle, kbdir


def _ids(conn):
    return {r[0]: r[1] for r in conn.execute("SELECT filepath, id FROM documents")}


def _learned(handle):
    """{learned item id: the path its detail names}"""
    return {i["id"]: (i["detail"] or {}).get("filepath") for i in handle.learning.learned_list(include_removed=True)["learned"]}


def _feedback(conn):
    return sorted(tuple(r) for r in conn.execute("SELECT query_id, filepath, helpful FROM query_feedback"))


def test_a_file_moved_over_another_document_takes_its_path_and_the_other_is_removed(small):
    handle, kbdir = _setup(small)
    ids, learned = _ids(handle.conn), _learned(handle)
    of_a = {i for i, p in learned.items() if p == "a.md"}
    assert of_a and set(learned.values()) >= {"a.md", "b.md"}
    os.replace(kbdir / "a.md", kbdir / "b.md")

    res = handle.sync()
    assert (res["renamed"], res["removed"], res["updated"], res["added"]) == (1, 1, 0, 0)
    assert res["renames"] == [{"from": "a.md", "to": "b.md"}]
    assert _ids(handle.conn) == {"b.md": ids["a.md"], "c.md": ids["c.md"]}
    after = _learned(handle)
    assert {i for i, p in after.items() if p == "b.md"} == of_a  # a's items, now on b.md; b's went with b
    assert not {i for i, p in learned.items() if p == "b.md"} & set(after)
    hits = [r["filepath"] for r in handle.query("glider thermal lift", ["soaring"])["results"]]
    assert "b.md" not in hits  # b.md holds a's text now: nothing learned about gliders points at it


def test_two_files_that_swap_names_swap_their_documents(small):
    handle, kbdir = _setup(small)
    ids, learned, feedback = _ids(handle.conn), _learned(handle), _feedback(handle.conn)
    os.rename(kbdir / "a.md", kbdir / "t.md")
    os.rename(kbdir / "b.md", kbdir / "a.md")
    os.rename(kbdir / "t.md", kbdir / "b.md")

    res = handle.sync()
    assert (res["renamed"], res["removed"], res["updated"], res["added"]) == (2, 0, 0, 0)
    assert res["renames"] == [{"from": "b.md", "to": "a.md"}, {"from": "a.md", "to": "b.md"}]
    assert _ids(handle.conn) == {"a.md": ids["b.md"], "b.md": ids["a.md"], "c.md": ids["c.md"]}
    swap = {"a.md": "b.md", "b.md": "a.md"}
    assert _learned(handle) == {i: swap.get(p, p) for i, p in learned.items()}
    assert _feedback(handle.conn) == sorted((q, swap.get(p, p), h) for q, p, h in feedback)
    assert handle.show("a.md")["title"] == "Beta"


def test_a_file_moved_away_and_replaced_by_a_new_text_keeps_its_document_at_the_new_path(small):
    handle, kbdir = _setup(small)
    ids = _ids(handle.conn)
    os.rename(kbdir / "a.md", kbdir / "z.md")
    write_doc(kbdir, "a.md", "# Delta\n\na new note about rockets\n")

    res = handle.sync()
    assert (res["renamed"], res["added"], res["removed"], res["updated"]) == (1, 1, 0, 0)
    assert res["renames"] == [{"from": "a.md", "to": "z.md"}]
    now = _ids(handle.conn)
    assert now["z.md"] == ids["a.md"] and now["a.md"] not in ids.values()
    assert handle.sync()["unchanged"] == 4  # settled


def test_an_unreadable_file_of_the_same_size_keeps_a_deleted_document_for_one_sync_only(small):
    handle, kbdir = small
    write_doc(kbdir, "secret.md", "# Secret\n\nthe launch codes are zebra\n")
    write_doc(kbdir, "other.md", "# Other\n\nunrelated\n")
    handle.sync()
    size = (kbdir / "secret.md").stat().st_size
    os.remove(kbdir / "secret.md")
    (kbdir / "junk.md").write_bytes(b"\0" * size)  # not a document: sync cannot read it

    first = handle.sync()
    assert first["removed"] == 0 and [w["file"] for w in first["warnings"]] == ["secret.md"]
    second = handle.sync()
    assert second["removed"] == 1 and second["warnings"] == []
    assert "junk.md" in [e["file"] for e in second["errors"]]
    assert "secret.md" not in [r["filepath"] for r in handle.query("launch codes zebra")["results"]]


def test_a_swap_interrupted_before_its_batch_is_finished_by_the_next_sync(small, monkeypatch):
    from kb_indexer.index import reader as reader_mod

    handle, kbdir = _setup(small)
    ids = _ids(handle.conn)
    os.rename(kbdir / "a.md", kbdir / "t.md")
    os.rename(kbdir / "b.md", kbdir / "a.md")
    os.rename(kbdir / "t.md", kbdir / "b.md")
    real = reader_mod.load_document

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a kill after the documents moved, before the batch stored them

    monkeypatch.setattr(reader_mod, "load_document", killed)
    with pytest.raises(KeyboardInterrupt):
        handle.sync()
    monkeypatch.setattr(reader_mod, "load_document", real)
    res = handle.sync()
    assert (res["updated"], res["added"], res["removed"]) == (2, 0, 0)
    assert _ids(handle.conn) == {"a.md": ids["b.md"], "b.md": ids["a.md"], "c.md": ids["c.md"]}
    assert (handle.show("a.md")["title"], handle.show("b.md")["title"]) == ("Beta", "Alpha")
    assert handle.sync()["unchanged"] == 3
