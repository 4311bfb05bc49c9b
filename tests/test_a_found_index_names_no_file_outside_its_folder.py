"""An index kbindex finds by itself (a ``kbindex.db`` in the working folder or a parent, named by nobody) may have
come with a cloned repository: it names no file outside its own folder. A knowledge-base root stored there that
lies outside is refused (``outside_kb``, with what to pass to allow it), so ``sync`` neither indexes nor
``enrich`` writes files there; nor are `add --keywords` files outside that folder read. Naming the index
(``--db``) or the root (``--kb``) allows both, as before."""

from __future__ import annotations

import json
import sqlite3

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import KbError

SECRET = "API_TOKEN=hunter2 zebracorn"


@pytest.fixture
def cloned(tmp_path):
    """A project whose index names ``victim/`` (beside the project) as its knowledge-base root."""
    project, victim = tmp_path / "project", tmp_path / "victim"
    (project / "kb").mkdir(parents=True)
    (project / "kb" / "a.md").write_text("# A\n\nalpha notes\n", encoding="utf-8")
    (victim / "work").mkdir(parents=True)
    (victim / "work" / "notes.md").write_text(f"# Notes\n\n{SECRET}\n", encoding="utf-8")
    KnowledgeBase.init(project / "kbindex.db", project / "kb")[0].close()
    return project, victim


def _set(db, sql, *args):
    with sqlite3.connect(db) as conn:
        conn.execute(sql, args)


@pytest.mark.parametrize("stored", ["../victim", "ABSOLUTE"])
def test_a_root_outside_the_found_index_folder_is_refused(cloned, run, stored):
    project, victim = cloned
    _set(project / "kbindex.db", "UPDATE meta SET value = ? WHERE key = 'kb_root'",
         str(victim) if stored == "ABSOLUTE" else stored)
    for args in (["sync"], ["enrich", "--all", "--no-llm"], ["query", "secret token"]):
        res = run(*args, "--format", "json", cwd=project / "kb")
        assert res.returncode == 1 and res.error()["code"] == "outside_kb", res.stderr
        assert "--kb" in res.error()["message"] and res.stdout == ""
    assert not (victim / "work" / "notes.keywords.json").exists()
    listed = run("list-docs", "--db", project / "kbindex.db", "--format", "json", cwd=project)
    assert listed.returncode == 0 and "work/notes.md" not in listed.stdout
    # named, the index (or the root) is used as it says
    named = run("sync", "--db", project / "kbindex.db", "--format", "json", cwd=project)
    assert named.returncode == 0 and named.json()["added"] == 1, named.stderr
    assert run("sync", "--kb", victim, "--format", "json", cwd=project).returncode == 0


def test_the_api_refuses_it_too_and_a_root_inside_is_used(cloned, monkeypatch):
    project, victim = cloned
    monkeypatch.chdir(project / "kb")
    with KnowledgeBase.open() as kb:            # found in a parent, its root inside its folder
        assert kb.confined and kb.sync()["added"] == 1
    _set(project / "kbindex.db", "UPDATE meta SET value = ? WHERE key = 'kb_root'", str(victim))
    with pytest.raises(KbError) as err:
        KnowledgeBase.open()
    assert err.value.code == "outside_kb" and str(victim) in err.value.message
    with KnowledgeBase.open(project / "kbindex.db") as kb:   # named: as before
        assert not kb.confined and kb.kb_root == victim


def test_a_keywords_file_outside_the_found_index_folder_is_not_read(cloned, run, tmp_path):
    project, _ = cloned
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"filepath": "a.md", "summary": "from outside", "keywords": ["leaked"]}),
                       encoding="utf-8")
    assert run("sync", "--format", "json", cwd=project).returncode == 0
    _set(project / "kbindex.db", "UPDATE documents SET keywords_file = ? WHERE filepath = 'a.md'", str(outside))
    (project / "kb" / "a.md").write_text("# A\n\nalpha notes, edited\n", encoding="utf-8")
    for args in (["sync"], ["update", "a.md"]):
        res = run(*args, "--format", "json", cwd=project)
        assert res.returncode == 1 and res.error()["code"] == "outside_kb", res.stderr
        assert "elsewhere.json" in res.error()["message"] and "--db" in res.error()["message"]
    shown = run("show", "a.md", "--db", project / "kbindex.db", "--format", "json", cwd=project).json()
    assert shown["summary"] != "from outside"
    named = run("sync", "--db", project / "kbindex.db", "--format", "json", cwd=project)   # named: read
    assert named.returncode == 0 and named.json()["updated"] == 1, named.stderr
