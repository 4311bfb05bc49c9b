"""A copied or moved project keeps using its own knowledge base: the root is stored relative to the index."""

from __future__ import annotations

import shutil

from helpers import write_doc
from kb_indexer.api import KnowledgeBase, stored_root_form, stored_root_path


def test_a_moved_project_syncs_its_own_folder(tmp_path):
    old = tmp_path / "old"
    write_doc(old / "knowledge-base", "a.md", "# A\n\ntext\n")
    handle, _ = KnowledgeBase.init(old / "kbindex.db", old / "knowledge-base")
    handle.sync()
    handle.close()
    new = tmp_path / "new"
    shutil.copytree(old, new)
    write_doc(new / "knowledge-base", "b.md", "# B\n\nonly in the copy\n")
    shutil.rmtree(old)
    with KnowledgeBase.open(new / "kbindex.db") as moved:
        assert moved.kb_root == new / "knowledge-base"
        res = moved.sync()
        assert (res["added"], res["unchanged"], res["removed"]) == (1, 1, 0)


def test_stored_forms():
    db = __import__("pathlib").Path("/p/proj/kbindex.db")
    P = type(db)
    assert stored_root_form(db, P("/p/proj/knowledge-base")) == P("knowledge-base")
    assert stored_root_form(db, P("/p/proj")) == P(".")
    assert stored_root_form(db, P("/p/notes")) == P("../notes")          # beside the project
    assert stored_root_form(db, P("/elsewhere/notes")) == P("/elsewhere/notes")
    assert stored_root_path(db, "knowledge-base") == P("/p/proj/knowledge-base")
    assert stored_root_path(db, "/abs/kb") == P("/abs/kb")               # indexes made before keep working


def test_init_again_keeps_the_relative_root(tmp_path):
    proj = tmp_path / "proj"
    (proj / "kb").mkdir(parents=True)
    handle, _ = KnowledgeBase.init(proj / "i.db", proj / "kb")
    handle.close()
    handle, res = KnowledgeBase.init(proj / "i.db")
    assert res["kb_root"] == str(proj / "kb")
    assert handle.conn.execute("SELECT value FROM meta WHERE key = 'kb_root'").fetchone()[0] == "kb"
    handle.close()
