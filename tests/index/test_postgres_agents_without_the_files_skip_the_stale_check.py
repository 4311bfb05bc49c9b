"""An agent on another machine queries a shared PostgreSQL index without a checkout of the knowledge base:
the stale check (which compares the files with the index) is skipped there, and it is told so once."""

from __future__ import annotations

import shutil


def test_a_missing_kb_root_on_a_server_index_skips_the_stale_check_with_a_note(pg_url, project):
    from kb_indexer.api import KnowledgeBase

    kb, _ = KnowledgeBase.init(pg_url, project / "knowledge-base")
    kb.sync()
    kb.close()
    shutil.rmtree(project / "knowledge-base")  # this machine has no copy of the files
    with KnowledgeBase.open(pg_url) as agent:
        assert agent.stale()["checked"] is False
        note = agent.stale_note()
        assert note is not None and note["checked"] is False
        assert "not on this machine" in note["message"] and "stale check is skipped" in note["message"]
        assert agent.list_docs()["count"] == 18  # the shared index still answers
        assert agent.show("alphago-architecture.md")["summary"]


def test_an_sqlite_index_without_its_kb_root_says_nothing_new(project):
    from kb_indexer.api import KnowledgeBase

    kb, _ = KnowledgeBase.init(str(project / "kbindex.db"), project / "knowledge-base")
    kb.sync()
    shutil.rmtree(project / "knowledge-base")
    assert kb.stale_note() is None
    kb.close()
