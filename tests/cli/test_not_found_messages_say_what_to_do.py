"""A thing that is not there says where kbindex looked and what to do next (docs/agents.md promises a next step in
every message): an unknown document names `list-docs` and `sync`, a mistyped folder for `sync` says it was looked
for in the working folder and the knowledge-base root, an unknown keyword says no document carries it."""

from __future__ import annotations


def test_each_not_found_names_a_next_step(kb, run):
    here = kb.kb_root.parent
    show = run("show", "nope.md", "--format", "json", cwd=here)
    assert show.returncode == 1 and show.error()["code"] == "not_found"
    assert "kbindex list-docs" in show.error()["message"] and "kbindex sync" in show.error()["message"]
    sync = run("sync", "wrok", "--format", "json", cwd=here)
    assert sync.returncode == 1 and sync.error()["code"] == "not_found"
    assert "Folder not found: wrok" in sync.error()["message"] and str(kb.kb_root.resolve()) in sync.error()["message"]
    docs = run("docs", "nosuchkw", "--format", "json", cwd=here)
    assert docs.returncode == 1 and docs.error()["code"] == "not_found"
    assert "no document is tagged with it" in docs.error()["message"]


def test_a_file_outside_the_root_of_the_index_kbindex_db_names_says_so(kb, run, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.md").write_text("# Note\n\ntext\n", encoding="utf-8")
    db = str(getattr(kb.db_path, "url", kb.db_path))
    res = run("add", "note.md", "--format", "json", cwd=other, env={"KBINDEX_DB": db})
    assert res.returncode == 1 and res.error()["code"] == "outside_kb"
    assert f"KBINDEX_DB names: {db}" in res.error()["message"]


def test_the_outside_root_message_hides_the_password_of_kbindex_db(tmp_path, monkeypatch):
    import pytest

    from kb_indexer.errors import ValidationError
    from kb_indexer.index.paths import to_relative

    root = tmp_path / "kb"
    root.mkdir()
    (tmp_path / "elsewhere.md").write_text("# x\n", encoding="utf-8")
    monkeypatch.setenv("KBINDEX_DB", "postgresql://team:S3cr3t-Pw!xyz@127.0.0.1:5432/kbindex")
    with pytest.raises(ValidationError) as refused:
        to_relative(root, tmp_path / "elsewhere.md")
    assert refused.value.code == "outside_kb"
    assert "S3cr3t" not in str(refused.value) and "postgresql://team:***@127.0.0.1:5432/kbindex" in str(refused.value)
