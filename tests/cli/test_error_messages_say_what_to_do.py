"""Common mistakes get a message that says what to do next: a document named without its ``.md``, and a
knowledge-base root that does not exist (the notes are elsewhere)."""

from __future__ import annotations

import pytest

from kb_indexer.errors import NotFoundError


def test_a_document_named_without_md_suggests_the_file(kb):
    with pytest.raises(NotFoundError, match=r"did you mean alphago-architecture\.md\?"):
        kb.show("alphago-architecture")
    with pytest.raises(NotFoundError) as missing:
        kb.show("no-such-document")
    assert "did you mean" not in str(missing.value)


def test_the_command_line_gives_the_same_hint(kb, run):
    res = run("show", "alphago-architecture", "--db", kb.db_path, "--format", "json")
    assert res.returncode == 1 and "did you mean alphago-architecture.md?" in res.error()["message"]


def test_sync_without_the_root_says_how_to_point_at_the_notes(tmp_path, run):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    assert run("init", cwd=tmp_path).returncode == 0
    res = run("sync", "--format", "json", cwd=tmp_path)
    assert res.returncode == 1 and "kbindex init --kb DIR" in res.error()["message"]
    assert run("init", "--kb", "notes", cwd=tmp_path).returncode == 0
    res = run("sync", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.json()["added"] == 1 and res.json()["errors"] == []
