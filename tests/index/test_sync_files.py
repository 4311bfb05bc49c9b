"""Sync and add: explicit keywords files, unreadable or vanished files, several similarities files, paths
resolved against the KB root, stale warnings, and older indexes learning which file lists a relation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import ValidationError
from kb_indexer.store.migrations import MIGRATIONS as MIGRATIONS_ALL
from tests.helpers import kw, write_doc

pytestmark = pytest.mark.both_engines


def _keywords(handle, path):
    return [k["keyword"] for k in handle.keywords(path)["keywords"]]


def _bump(path: Path, text: str) -> None:
    """Rewrite a file so that its stat signature surely changes."""
    path.write_text(text, encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


# -- 1. add FILE --keywords F survives sync and update ----------------------------------------------

def test_explicit_keywords_file_outside_kb_survives_sync_update_and_stale_check(small, tmp_path, monkeypatch):
    handle, kbdir = small
    md = write_doc(kbdir, "notes/a.md", "# A\n\nalpha text\n")
    kwdir = tmp_path / "kwfiles"
    kwdir.mkdir()
    kwfile = kwdir / "a.json"
    kwfile.write_text(json.dumps(kw("about a", "k1", "k2", filepath="notes/a.md")), encoding="utf-8")
    monkeypatch.chdir(kwdir)                       # a cwd-relative --keywords path
    assert handle.add(str(md), "a.json")["keywords"] == 2
    assert handle.show("notes/a.md")["keywords_file"] == str(kwfile.resolve())   # absolute: outside the KB
    monkeypatch.chdir(tmp_path)

    res = handle.sync()
    assert res["errors"] == [] and res["unchanged"] == 1
    assert _keywords(handle, "notes/a.md") == ["k1", "k2"]
    assert handle.stale()["stale"] is False

    _bump(md, "# A\n\nalpha text, edited\n")       # the document changes: re-read with its keywords file
    assert handle.stale()["changed"] == 1
    assert handle.sync()["updated"] == 1
    assert _keywords(handle, "notes/a.md") == ["k1", "k2"]

    _bump(kwfile, json.dumps(kw("about a", "k3", filepath="notes/a.md")))   # the keywords file changes
    assert handle.stale()["changed"] == 1
    assert handle.sync()["updated"] == 1
    assert _keywords(handle, "notes/a.md") == ["k3"]
    assert handle.stale()["stale"] is False

    _bump(kwfile, json.dumps(kw("about a", "k4", filepath="notes/a.md")))
    assert handle.update("notes/a.md")["keywords"] == 1
    assert _keywords(handle, "notes/a.md") == ["k4"]
    assert handle.sync()["unchanged"] == 1


def test_explicit_keywords_file_inside_kb_is_stored_relative_and_not_an_orphan(small):
    handle, kbdir = small
    write_doc(kbdir, "b.md", "# B\n\nbeta\n")
    inner = kbdir / "meta" / "other.keywords.json"
    inner.parent.mkdir()
    inner.write_text(json.dumps(kw("about b", "kb1", filepath="b.md")), encoding="utf-8")
    handle.add(str(kbdir / "b.md"), str(inner))
    assert handle.show("b.md")["keywords_file"] == "meta/other.keywords.json"
    res = handle.sync()
    assert res["errors"] == [] and res["unchanged"] == 1
    assert _keywords(handle, "b.md") == ["kb1"]
    assert handle.stale()["stale"] is False


def test_missing_explicit_keywords_file_is_an_error_not_a_silent_loss(small, tmp_path):
    handle, kbdir = small
    md = write_doc(kbdir, "a.md", "# A\n\nalpha\n")
    kwfile = tmp_path / "a.json"
    kwfile.write_text(json.dumps(kw("about a", "k1", filepath="a.md")), encoding="utf-8")
    handle.add(str(md), str(kwfile))
    kwfile.unlink()
    res = handle.sync()
    assert [e["file"] for e in res["errors"]] == ["a.md"]
    assert "keywords file" in res["errors"][0]["message"].lower()
    assert "a.md keeps its indexed version (later edits are not indexed)" in res["errors"][0]["message"]
    assert _keywords(handle, "a.md") == ["k1"]          # the index keeps what it had
    assert handle.stale()["stale"] is False              # reported once; not a warning on every query
    with pytest.raises(ValidationError, match="(?i)keywords file .* is missing"):
        handle.update("a.md")
    handle.add("a.md")                                   # re-adding without --keywords drops it
    assert handle.show("a.md")["keywords_file"] is None and handle.sync()["errors"] == []


# -- 3. a dangling symlink or a vanished file does not fail the whole sync ---------------------------------

def test_dangling_symlink_is_reported_and_the_rest_is_synced(small):
    handle, kbdir = small
    write_doc(kbdir, "good.md", "# Good\n\ntext\n")
    write_doc(kbdir, "was-real.md", "# Real\n\ntext\n")
    assert handle.sync()["added"] == 2
    (kbdir / "was-real.md").unlink()
    (kbdir / "was-real.md").symlink_to(kbdir / "nowhere.md")   # an indexed file turned into a dangling link
    (kbdir / "broken.md").symlink_to(kbdir / "nowhere-either.md")
    write_doc(kbdir, "new.md", "# New\n\ntext\n")
    res = handle.sync()
    assert res["added"] == 1 and res["removed"] == 1 and res["unchanged"] == 1
    assert sorted(e["file"] for e in res["errors"]) == ["broken.md", "was-real.md"]
    message = next(e["message"] for e in res["errors"] if e["file"] == "was-real.md")
    assert "dangling" in message or "not found" in message.lower()
    assert [d["filepath"] for d in handle.list_docs()["documents"]] == ["good.md", "new.md"]
    assert handle.stale()["stale"] is False


def test_file_deleted_between_walk_and_stat_is_reported_and_dropped(small, monkeypatch):
    from kb_indexer.index import sync as sync_mod

    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\ntext\n")
    gone = write_doc(kbdir, "gone.md", "# Gone\n\ntext\n")
    assert handle.sync()["added"] == 2
    real_scan = sync_mod.scan

    def walk_then_delete(root, base=""):
        found = real_scan(root, base)
        gone.unlink()                      # changed, then deleted after the walk, before it is read
        return found

    monkeypatch.setattr(sync_mod, "scan", walk_then_delete)
    _bump(gone.with_name("a.md"), "# A\n\ntext changed\n")
    _bump(gone, "# Gone\n\ntext changed\n")
    res = handle.sync()
    assert res["updated"] == 1 and res["removed"] == 1
    assert [e["file"] for e in res["errors"]] == ["gone.md"]
    assert [d["filepath"] for d in handle.list_docs()["documents"]] == ["a.md"]


# -- 8. two similarities.json files, deleted files, stable ids --------------------------------------------

def _rel(keyword1, keyword2, context, score, type_="abbreviation"):
    return {"keyword1": keyword1, "keyword2": keyword2, "type": type_, "context": context, "score": score}


def _relations(handle):
    return {_pair(r["k1"], r["k2"]): dict(r) for r in handle.conn.execute(
        "SELECT s.id, s.score, s.context, s.origin, k1.keyword AS k1, k2.keyword AS k2 FROM keyword_similarities s "
        "JOIN keywords k1 ON k1.id = s.keyword_id_1 JOIN keywords k2 ON k2.id = s.keyword_id_2")}


def _pair(a, b):
    return tuple(sorted((a, b)))


def test_two_similarity_files_keep_shared_relations_and_deleted_file_is_forgotten(small):
    handle, kbdir = small
    root_file, kb_file = kbdir.parent / "similarities.json", kbdir / "similarities.json"

    def write(path, *entries):
        _bump(path, json.dumps({"similarities": list(entries)}))

    x_root = _rel("RL", "reinforcement learning", "root ctx", 0.9)
    x_kb = _rel("RL", "reinforcement learning", "kb ctx", 0.5)
    y = _rel("LLM", "large language model", "root only", 0.8)
    z = _rel("MDP", "markov decision process", "kb only", 0.7)
    write(root_file, x_root, y)
    write(kb_file, x_kb, z)
    res = handle.sync()
    assert res["errors"] == [] and res["similarities"]["files"] == 2
    before = _relations(handle)
    X, Y, Z = _pair("rl", "reinforcement learning"), _pair("llm", "large language model"), \
        _pair("mdp", "markov decision process")
    assert set(before) == {X, Y, Z}

    # The KB file stops listing X: the root file still does, so X stays (same id) with the root's values.
    write(kb_file, z)
    res = handle.sync()
    assert res["similarities"]["removed"] == 0
    after = _relations(handle)
    assert set(after) == {X, Y, Z}
    assert after[X]["id"] == before[X]["id"] and after[Z]["id"] == before[Z]["id"]
    assert (after[X]["context"], after[X]["score"], after[X]["origin"]) == ("root ctx", 0.9, "file:similarities.json")
    assert handle.stale()["stale"] is False

    # A person changes Y; then the root file is deleted: X (no file lists it) goes, Y (a person's) stays.
    handle.relate("LLM", "large language model", "abbreviation", "mine", 0.6)
    root_file.unlink()
    assert handle.stale()["stale"] is True and handle.stale()["similarities_changed"]
    kept = handle.sync()   # a checkout without the file: X stays, and the stale check still says so
    assert kept["similarities"]["removed"] == 0 and "kbindex sync --force" in kept["warnings"][0]["message"]
    assert set(_relations(handle)) == {X, Y, Z} and handle.stale()["stale"] is True
    res = handle.sync(force=True)
    assert res["similarities"]["removed"] == 1
    final = _relations(handle)
    assert set(final) == {Y, Z}
    assert final[Y]["id"] == before[Y]["id"] and final[Y]["origin"] == "manual"
    assert handle.stale()["stale"] is False
    # The KB file alone is re-read as before, and its listing is kept.
    write(kb_file, z, x_kb)
    assert handle.sync()["similarities"]["imported"] == 2
    assert set(_relations(handle)) == {X, Y, Z}


def test_sync_of_the_kb_root_directory_is_a_full_sync(small, monkeypatch):
    handle, kbdir = small
    (kbdir / "similarities.json").write_text(json.dumps({"similarities": [
        _rel("RL", "reinforcement learning", "ML", 1.0)]}), encoding="utf-8")
    write_doc(kbdir, "a.md", "# A\n\nalpha\n")
    res = handle.sync(str(kbdir))
    assert res["added"] == 1
    assert res["similarities"] == {"files": 1, "imported": 1, "unchanged_files": 0, "removed": 0}
    monkeypatch.chdir(kbdir)
    assert handle.sync(".")["similarities"]["unchanged_files"] == 1
    write_doc(kbdir, "sub/b.md", "# B\n\nbeta\n")
    assert "similarities" not in handle.sync("sub")     # a sub-folder only: no similarities files


# -- 9. a file in the cwd does not hide the KB file of the same name -------------------------------------

def test_cwd_file_outside_kb_does_not_hide_kb_file(tmp_path, monkeypatch, run):
    proj = tmp_path / "proj"
    kbdir = proj / "knowledge-base"
    write_doc(kbdir, "notes.md", "# KB notes\n\nin the kb\n")
    (proj / "notes.md").write_text("# Project notes\n", encoding="utf-8")
    handle, _ = KnowledgeBase.init(proj / "kbindex.db", kbdir)
    try:
        handle.sync()
        monkeypatch.chdir(proj)
        assert handle.show("notes.md")["title"] == "KB notes"
        assert handle.update("notes.md")["filepath"] == "notes.md"
        (proj / "only-here.md").write_text("# Outside\n", encoding="utf-8")
        with pytest.raises(ValidationError, match="outside the knowledge-base root"):
            handle.add("only-here.md")
        (kbdir / "notes.md").unlink()                 # indexed, deleted from the KB: still addressable
        assert handle.remove("notes.md")["filepath"] == "notes.md"
    finally:
        handle.close()
    res = run("show", "notes.md", "-f", "json", cwd=proj)
    assert res.returncode == 1 and res.error()["code"] == "not_found"


# -- lesser: stale warnings sync cannot clear; keywords filepath check ------------------------------------

def test_files_sync_rejects_do_not_make_the_index_stale_until_they_change(small):
    handle, kbdir = small
    write_doc(kbdir, "good.md", "# Good\n\ntext\n")
    bad = kbdir / "bad.md"
    bad.write_bytes(b"# Bad \xff\xfe\n")
    write_doc(kbdir, "mismatch.md", "# M\n\ntext\n", kw("s", "k", filepath="elsewhere/mismatch.md"))
    res = handle.sync()
    assert sorted(e["file"] for e in res["errors"]) == ["bad.md", "mismatch.keywords.json"]
    assert handle.stale()["stale"] is False
    _bump(bad, "# Bad \ufffd fixed\n")
    info = handle.stale()
    assert info["stale"] is True and info["added"] == 1
    assert handle.sync()["added"] == 1 and handle.stale()["stale"] is False
    # An indexed file edited into something sync rejects: the old row stays, and no endless warning.
    bad.write_bytes(b"# Bad again \xff\n")
    st = bad.stat()
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns + 20_000_000))
    res = handle.sync()
    assert sorted(e["file"] for e in res["errors"]) == ["bad.md", "mismatch.keywords.json"]
    assert handle.show("bad.md")["title"] == "Bad \ufffd fixed"
    assert handle.stale()["stale"] is False


def test_invalid_similarities_file_is_reported_once(small):
    handle, kbdir = small
    sims = kbdir.parent / "similarities.json"
    sims.write_text("{not json", encoding="utf-8")
    assert len(handle.sync()["errors"]) == 1
    assert handle.stale()["stale"] is False
    _bump(sims, json.dumps({"similarities": [_rel("RL", "reinforcement learning", "ML", 1.0)]}))
    assert handle.stale()["stale"] is True
    assert handle.sync()["similarities"]["imported"] == 1 and handle.stale()["stale"] is False


@pytest.mark.parametrize("value,ok", [
    ("sub/zzz.md", True), ("./sub/zzz.md", True), ("sub\\zzz.md", True), ("zzz.md", True),
    ("../../../etc/zzz.md", False), ("other/zzz.md", False), ("/sub/zzz.md", False), ("sub/zzz", False),
    ("../sub/zzz.md", False),
])
def test_keywords_filepath_must_name_the_document(small, value, ok):
    handle, kbdir = small
    write_doc(kbdir, "sub/zzz.md", "# Z\n\nzed\n", kw("s", "k", filepath=value))
    res = handle.sync()
    if ok:
        assert res["errors"] == [] and res["added"] == 1
    else:  # indexed without the keywords file, which is reported
        assert res["added"] == 1 and "describes" in res["errors"][0]["message"]
        assert res["errors"][0]["file"] == "sub/zzz.keywords.json" and handle.keywords("sub/zzz.md")["keywords"] == []


def test_older_index_learns_which_file_lists_its_relations(tmp_path, monkeypatch):
    """An index from before m040 keeps only ``origin``: the upgrade records it as the file listing, so the
    next sync still forgets what a file stopped listing (and what a deleted file listed)."""
    from kb_indexer.index.files import load_json_file, validate_similarities_data
    from kb_indexer.store import migrations, opening
    from kb_indexer.store.documents import KeywordIds

    kbdir = tmp_path / "p" / "knowledge-base"
    kbdir.mkdir(parents=True)
    sims = kbdir.parent / "similarities.json"
    sims.write_text(json.dumps({"similarities": [_rel("RL", "reinforcement learning", "ML", 1.0),
                                                 _rel("LLM", "large language model", "NLP", 0.8)]}), encoding="utf-8")
    names = [name for name, _ in migrations.MIGRATIONS]
    before = migrations.MIGRATIONS[:names.index("m040_similarity_files")]  # an index released before m040
    monkeypatch.setattr(migrations, "MIGRATIONS", before)
    conn, _ = opening.init_db(kbdir.parent / "kbindex.db", kbdir)
    with conn:  # as the code of that time wrote them: the file only in ``origin``
        ids = KeywordIds(conn)
        for e in validate_similarities_data(load_json_file(sims)[0], "s"):
            k1, k2 = sorted((ids.ensure(e["keyword1"]), ids.ensure(e["keyword2"])))
            conn.execute("INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type, context, "
                         "score, directional, origin) VALUES (?, ?, ?, ?, ?, ?, 'file:similarities.json')",
                         (k1, k2, e["type"], e["context"], e["score"], int(e["directional"])))
    conn.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", list(MIGRATIONS_ALL))
    handle = KnowledgeBase.open(kbdir.parent / "kbindex.db")
    try:
        assert handle.conn.execute("SELECT COUNT(*) FROM similarity_files").fetchone()[0] == 2
        rl = handle.conn.execute("SELECT id FROM keyword_similarities ORDER BY id").fetchone()[0]
        _bump(sims, json.dumps({"similarities": [_rel("RL", "reinforcement learning", "ML", 0.9)]}))
        assert handle.sync()["similarities"]["removed"] == 1
        assert [tuple(r) for r in handle.conn.execute("SELECT id, score FROM keyword_similarities")] == [(rl, 0.9)]
        sims.unlink()
        assert handle.sync(force=True)["similarities"]["removed"] == 1
        assert handle.conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0] == 0
    finally:
        handle.close()
