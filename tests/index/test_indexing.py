"""Markdown parsing, add/update/remove and incremental sync on small hand-made KBs."""

from __future__ import annotations

import json
import os

import pytest

from kb_indexer.api import QueryOptions
from kb_indexer.front_matter import load_front_matter
from kb_indexer.index.markdown import parse_markdown
from kb_indexer.store import fulltext
from tests.helpers import kw, write_doc

pytestmark = pytest.mark.both_engines


def test_parse_markdown_title_summary_body_front_matter():
    text = "---\ntitle: From FM\nkeywords: [a b, \"c, d\"]\ntags:\n  - x\n---\n# Heading One\n\n" \
           "First **para** with a [link](http://x).\nstill first.\n\nSecond para.\n"
    parsed = parse_markdown(text)
    assert parsed.front_matter["title"] == "From FM"
    assert parsed.front_matter["keywords"] == ["a b", "c, d"]
    assert parsed.front_matter["tags"] == ["x"]
    assert parsed.title == "Heading One"
    assert parsed.summary == "First para with a link. still first."
    assert parsed.body.startswith("# Heading One")
    assert "title: From FM" not in parsed.body


def test_parse_front_matter_block_list_and_scalars():
    fm = load_front_matter("name: 'quoted'\nlist:\n  - one\n  - 'two'\nempty:\n")
    assert fm == {"name": "quoted", "list": ["one", "two"], "empty": None}  # YAML: an empty value is null


def test_plain_markdown_without_keywords_file_is_indexed(small):
    handle, kbdir = small
    write_doc(kbdir, "plain.md", "Intro text before heading.\n\n# Plain Title\n\nBody words here.\n")
    write_doc(kbdir, "fm.md", "---\nkeywords: [Alpha, beta]\n---\n# FM Doc\n\nAbout alpha.\n")
    res = handle.sync()
    assert res["added"] == 2 and res["errors"] == []
    shown = handle.show("plain.md")
    assert shown["title"] == "Plain Title"
    assert shown["summary"] == "Intro text before heading."
    assert shown["keywords"] == []
    assert [k["keyword"] for k in handle.show("fm.md")["keywords"]] == ["Alpha", "beta"]
    assert handle.search(["alpha"])["count"] == 1
    # Body text is in the full-text index.
    hit = handle.query("words", options=QueryOptions(method="fulltext", record=False))
    assert [r["filepath"] for r in hit["results"]] == ["plain.md"]


def test_sync_is_incremental_and_reports_counts(small):
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\ntext a\n", kw("sa", "k1", "k2"))
    write_doc(kbdir, "sub/b.md", "# B\n\ntext b\n", kw("sb", "k2"))
    write_doc(kbdir, "c.md", "# C\n\ntext c\n")
    assert handle.sync() == {"added": 3, "updated": 0, "removed": 0, "unchanged": 0, "errors": [], "warnings": [], "batches": 1,
                             "renamed": 0, "renames": [],
                             "similarities": {"files": 0, "imported": 0, "unchanged_files": 0, "removed": 0}}
    assert handle.show("sub/b.md")["filepath"] == "sub/b.md"
    again = handle.sync()
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 3)
    # Touching without changing content: still unchanged (hash compare), stat refreshed.
    os.utime(kbdir / "a.md", ns=(1, 1))
    assert handle.sync()["unchanged"] == 3
    # Content change of the keywords file -> updated; deletion -> removed.
    write_doc(kbdir, "a.md", "# A\n\ntext a\n", kw("sa", "k1", "k3"))
    (kbdir / "c.md").unlink()
    res = handle.sync()
    assert (res["updated"], res["removed"], res["unchanged"]) == (1, 1, 1)
    assert [k["keyword"] for k in handle.keywords("a.md")["keywords"]] == ["k1", "k3"]
    assert handle.list_docs()["count"] == 2


def test_one_bad_file_is_reported_and_skipped(small):
    handle, kbdir = small
    write_doc(kbdir, "good.md", "# Good\n\nok\n", kw("s", "g"))
    write_doc(kbdir, "bad.md", "# Bad\n\nok\n")
    (kbdir / "bad.keywords.json").write_text("{not json", encoding="utf-8")
    (kbdir / "binary.md").write_bytes(b"\x00\x01\x02binary")
    (kbdir / "latin1.md").write_bytes("# caf\xe9\n".encode("latin-1"))
    (kbdir / "orphan.keywords.json").write_text("{}", encoding="utf-8")
    res = handle.sync()
    assert res["added"] == 2  # bad.md without its bad keywords file
    files = {e["file"]: e["message"] for e in res["errors"]}
    assert set(files) == {"bad.keywords.json", "binary.md", "latin1.md"}
    assert [w["file"] for w in res["warnings"]] == ["orphan.keywords.json"]   # a keywords file without a note
    assert "not valid JSON" in files["bad.keywords.json"]
    assert "binary" in files["binary.md"]
    assert "UTF-8" in files["latin1.md"]
    assert handle.list_docs()["count"] == 2


def test_add_update_remove_roundtrip(small, monkeypatch):
    handle, kbdir = small
    write_doc(kbdir, "d.md", "# D\n\nfirst\n", kw("sd", "one"))
    monkeypatch.chdir(kbdir.parent)
    res = handle.add("knowledge-base/d.md")
    assert res["action"] == "added" and res["filepath"] == "d.md" and res["keywords"] == 1
    write_doc(kbdir, "d.md", "# D2\n\nsecond\n", kw("sd2", "one", "two"))
    assert handle.update("d.md")["title"] == "D2"
    assert handle.show("d.md")["summary"] == "sd2"
    doc_id = handle.conn.execute("SELECT id FROM documents WHERE filepath = 'd.md'").fetchone()[0]
    assert "second" in fulltext.body(handle.conn, doc_id)
    assert handle.remove("d.md")["action"] == "removed"
    assert handle.list_docs()["count"] == 0
    assert fulltext.bodies(handle.conn, [doc_id]) == {}    # its full-text row went with it


def test_learned_keywords_survive_reindexing(small):
    handle, kbdir = small
    write_doc(kbdir, "d.md", "# D\n\nfirst\n", kw("sd", "one"))
    handle.sync()
    doc_id = handle.conn.execute("SELECT id FROM documents").fetchone()[0]
    handle.conn.execute("INSERT INTO keywords (keyword, display) VALUES ('learned kw', 'learned kw')")
    handle.conn.execute("INSERT INTO document_keywords (document_id, keyword_id, source) "
                        "SELECT ?, id, 'learned' FROM keywords WHERE keyword = 'learned kw'", (doc_id,))
    write_doc(kbdir, "d.md", "# D\n\nchanged\n", kw("sd", "one", "two"))
    handle.sync()
    sources = {k["keyword"]: k["source"] for k in handle.keywords("d.md")["keywords"]}
    assert sources == {"one": "file", "two": "file", "learned kw": "learned"}


def test_directional_relation_keeps_its_source_side(small):
    handle, _ = small
    # Create "zzz" first so that its id is smaller than "aaa"'s: the stored order is reversed.
    handle.relate("zzz", "yyy", "synonym", "ctx")
    handle.relate("aaa", "zzz", "application", "zzz is an application of aaa", 0.6, directional=True)
    by_kw = {r["keyword"]: r for r in handle.similar("aaa")["similar_keywords"]}
    assert by_kw["zzz"]["direction"] == "outgoing"
    back = {r["keyword"]: r for r in handle.similar("zzz")["similar_keywords"]}
    assert back["aaa"]["direction"] == "incoming"
    assert back["yyy"]["direction"] == "both"
    exported = [s for s in handle.export()["tables"]["keyword_similarities"] if s["directional"]]
    assert len(exported) == 1


def test_similarities_file_at_project_root_is_synced(small):
    handle, kbdir = small
    (kbdir.parent / "similarities.json").write_text(
        '{"similarities": [{"keyword1": "RL", "keyword2": "reinforcement learning", "type": "abbreviation",'
        ' "context": "ML", "score": 1.0}, {"keyword1": "rl", "keyword2": "reinforcement learning",'
        ' "type": "related_concept", "context": "ML too", "score": 0.4}]}', encoding="utf-8")
    res = handle.sync()
    assert res["similarities"] == {"files": 1, "imported": 2, "unchanged_files": 0, "removed": 0}
    assert handle.similar("RL")["count"] == 2
    assert handle.sync()["similarities"]["unchanged_files"] == 1


def test_stored_paths_are_relative_posix_and_outside_paths_refused(small, tmp_path, monkeypatch):
    from kb_indexer.errors import ValidationError

    handle, kbdir = small
    outside = tmp_path / "outside.md"
    outside.write_text("# Out\n")
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        handle.add(str(outside))
    monkeypatch.chdir(kbdir)
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        handle.add("../../outside.md")
    with pytest.raises(ValidationError, match="outside the knowledge-base root"):
        handle.show("../../../etc/passwd")
    # A symlink inside the KB pointing outside is refused too.
    (kbdir / "link.md").symlink_to(outside)
    with pytest.raises(ValidationError, match="outside"):
        handle.add(str(kbdir / "link.md"))
    assert handle.list_docs()["count"] == 0


def test_changed_similarities_file_updates_in_place_and_drops_removed_relations(small):
    handle, kbdir = small
    sims = kbdir.parent / "similarities.json"

    def write(entries):
        sims.write_text(json.dumps({"similarities": entries}), encoding="utf-8")

    a = {"keyword1": "RL", "keyword2": "reinforcement learning", "type": "abbreviation", "context": "ML", "score": 1.0}
    b = {"keyword1": "rl", "keyword2": "experience learning", "type": "related_concept", "context": "ML", "score": 0.9}
    write([a, b])
    handle.sync()
    ids = {r["keyword"]: r["id"] for r in handle.conn.execute(
        "SELECT s.id, k.keyword FROM keyword_similarities s JOIN keywords k ON k.id = s.keyword_id_2")}
    write([dict(a, score=0.8)])
    res = handle.sync()["similarities"]
    assert res["files"] == 1
    rows = handle.conn.execute("SELECT id, score FROM keyword_similarities").fetchall()
    assert [(r[0], r[1]) for r in rows] == [(ids["reinforcement learning"], 0.8)]
