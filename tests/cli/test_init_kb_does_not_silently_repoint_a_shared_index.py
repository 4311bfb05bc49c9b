"""`init --kb DIR` on an index holding the documents of another root is refused (`would_repoint`, nothing
changed): the stored root is every user's (a team's shared index, the service's cron sync). `--force` moves it;
the same root again, a root for an empty index, or a plain `init` are fine."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def _db(kb):
    return getattr(kb.db_path, "url", kb.db_path)


def test_another_root_for_an_index_with_documents_needs_force(kb, tmp_path, project):
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.errors import KbError

    elsewhere = tmp_path / "alice-notes"
    elsewhere.mkdir()
    with pytest.raises(KbError) as refused:
        KnowledgeBase.init(_db(kb), elsewhere)
    assert refused.value.code == "would_repoint"
    assert "kbindex init --kb" in refused.value.message and "--force" in refused.value.message
    again, result = KnowledgeBase.init(_db(kb), project / "knowledge-base")   # the same root: fine
    again.close()
    assert result["kb_root"] == str((project / "knowledge-base").resolve())
    plain, result = KnowledgeBase.init(_db(kb))
    plain.close()
    assert result["kb_root"] == str((project / "knowledge-base").resolve())
    moved, result = KnowledgeBase.init(_db(kb), elsewhere, force=True)
    moved.close()
    assert result["kb_root"] == str(elsewhere.resolve())


def test_an_empty_index_takes_another_root(empty_kb, tmp_path):
    from kb_indexer.api import KnowledgeBase

    other = tmp_path / "other"
    other.mkdir()
    handle, result = KnowledgeBase.init(_db(empty_kb), other)
    handle.close()
    assert result["kb_root"] == str(other.resolve())


def test_the_cli_refuses_with_exit_1_and_changes_nothing(kb, run, tmp_path, project):
    db = str(_db(kb))
    res = run("init", "--db", db, "--kb", tmp_path, "--format", "json")
    assert res.returncode == 1 and res.error()["code"] == "would_repoint" and res.stdout == ""
    assert run("sync", "--db", db, "--format", "json", cwd=project).json()["removed"] == 0
