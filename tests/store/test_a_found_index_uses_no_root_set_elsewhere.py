"""An index kbindex finds by itself (a ``kbindex.db`` in the working folder or a parent, named by nobody) may have
come with a cloned repository: a knowledge-base root stored in it that lies outside its own folder (links
resolved) is used only when it was set for it on this machine: by ``init`` creating it, or ``init --kb``
(remembered outside every index). Otherwise it is refused
(``outside_kb``, with what to pass to allow it), so ``sync`` neither indexes nor ``enrich`` writes files there.
Naming the index (``--db``) or the root (``--kb``) allows it, as before."""

from __future__ import annotations

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
        assert kb.sync()["added"] == 1
    _set(project / "kbindex.db", "UPDATE meta SET value = ? WHERE key = 'kb_root'", str(victim))
    with pytest.raises(KbError) as err:
        KnowledgeBase.open()
    assert err.value.code == "outside_kb" and str(victim) in err.value.message
    with KnowledgeBase.open(project / "kbindex.db") as kb:   # named: as before
        assert kb.kb_root == victim


def test_a_root_set_here_with_init_is_used_when_found(tmp_path, run, monkeypatch):
    notes, here = tmp_path / "notes", tmp_path / "work"
    notes.mkdir()
    here.mkdir()
    (notes / "n.md").write_text("# N\n\nzebracorn notes\n", encoding="utf-8")
    assert run("init", "--kb", notes, cwd=here).returncode == 0
    res = run("sync", "--format", "json", cwd=here)
    assert res.returncode == 0 and res.json()["added"] == 1, res.stderr
    assert run("query", "zebracorn", "--format", "json", cwd=here).json()["total"] == 1
    roots = tmp_path / "xdg-state" / "kbindex" / "roots.json"
    assert roots.stat().st_mode & 0o077 == 0 and str(notes.resolve()) in roots.read_text(encoding="utf-8")
    # another index in another folder naming the same root was not set here: refused until it is
    other = tmp_path / "other"
    other.mkdir()
    KnowledgeBase.init(other / "kbindex.db", other / "kb")[0].close()
    _set(other / "kbindex.db", "UPDATE meta SET value = ? WHERE key = 'kb_root'", str(notes))
    assert run("sync", "--format", "json", cwd=other).error()["code"] == "outside_kb"
    assert run("init", "--kb", notes, cwd=other).returncode == 0      # set here now: remembered
    assert run("sync", "--format", "json", cwd=other).returncode == 0


def test_a_root_inside_the_index_folder_is_not_remembered(tmp_path, run):
    (tmp_path / "p" / "kb").mkdir(parents=True)
    assert run("init", "--kb", "kb", cwd=tmp_path / "p").returncode == 0
    assert not (tmp_path / "xdg-state" / "kbindex" / "roots.json").exists()


def test_a_knowledge_base_link_made_here_works(tmp_path, run):
    notes, proj = tmp_path / "notes", tmp_path / "proj"
    notes.mkdir()
    proj.mkdir()
    (notes / "n.md").write_text("# N\n\nzebracorn notes\n", encoding="utf-8")
    (proj / "knowledge-base").symlink_to(notes)        # a plain `init`: the default root, a link to elsewhere
    assert run("init", cwd=proj).returncode == 0
    res = run("sync", "--format", "json", cwd=proj)
    assert res.returncode == 0 and res.json()["added"] == 1, res.stderr


def test_a_link_that_came_with_the_index_is_refused_naming_its_target(tmp_path, run):
    victim, proj = tmp_path / "victim", tmp_path / "proj"
    victim.mkdir()
    (victim / "secret.md").write_text("# S\n\nsecret\n", encoding="utf-8")
    (proj / "knowledge-base").mkdir(parents=True)
    KnowledgeBase.init(proj / "kbindex.db", proj / "knowledge-base")[0].close()   # made elsewhere: not remembered
    (proj / "knowledge-base").rmdir()
    (proj / "knowledge-base").symlink_to(victim)
    res = run("sync", "--format", "json", cwd=proj)
    assert res.returncode == 1 and res.error()["code"] == "outside_kb"
    assert f"which leads to {victim.resolve()}" in res.error()["message"]


def test_a_refused_index_is_not_upgraded_first(cloned, run):
    """The refusal comes before anything is written: an older index found with a foreign root is not migrated."""
    project, victim = cloned
    db = project / "kbindex.db"
    _set(db, "UPDATE meta SET value = ? WHERE key = 'kb_root'", str(victim))
    with sqlite3.connect(db) as conn:   # as an index written before the last migration
        conn.execute("ALTER TABLE documents DROP COLUMN text_hash")
        conn.execute("DELETE FROM _migrations WHERE name = 'm110_document_text_hash'")
    res = run("query", "secret token", "--format", "json", cwd=project)
    assert res.returncode == 1 and res.error()["code"] == "outside_kb", res.stderr
    with sqlite3.connect(db) as conn:
        assert "m110_document_text_hash" not in {r[0] for r in conn.execute("SELECT name FROM _migrations")}
        assert "text_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(documents)")}


def test_a_relative_root_with_dot_dot_is_shown_and_stored_normalised(tmp_path, run):
    """`init --kb ../notes` showed (and remembered) /…/work/../notes."""
    notes, here = tmp_path / "notes", tmp_path / "work"
    notes.mkdir()
    here.mkdir()
    res = run("init", "--kb", "../notes", "--format", "json", cwd=here)
    assert res.returncode == 0, res.stderr
    assert res.json()["kb_root"] == str(notes) and ".." not in res.stdout
    assert run("sync", "--format", "json", cwd=here).returncode == 0
