"""An index written by any released schema version upgrades in place with its data intact.

Two sources of old indexes:
- tests/data/upgrade/<last migration>-<commit>.db, written by the real kbindex of that commit on main
  (tests/data/upgrade/make_fixtures.py: init, sync, similarities, relate, query, feedback, learn);
- every prefix of MIGRATIONS (so a migration added later, e.g. m050 or m060, is covered without editing this
  file), filled with the rows of an index the current code wrote, restricted to the tables and columns the
  prefix has.
After opening with the current code: every migration is applied, the rows are still there, query, history,
feedback, learned items, sync and export/import work.
"""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from pathlib import Path

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.store import migrations
from kb_indexer.store import opening
from kb_indexer.api import QueryOptions

DATA = Path(__file__).resolve().parents[1] / "data" / "upgrade"
FIXTURES = sorted(DATA.glob("*.db"))

# Kept tables whose rows must all survive an upgrade (when the old index has them).
DATA_TABLES = ("documents", "keywords", "document_keywords", "keyword_similarities", "queries", "query_attempts",
               "query_feedback", "learned_items", "learned_terms")

# Fixtures that fail to upgrade on this branch because of a defect being fixed elsewhere (report names the
# owner). Strict: when the fix lands, the test fails until the entry is removed.
KNOWN_BROKEN: dict[str, str] = {}  # fixture name -> why it cannot upgrade (none: m050 repairs b6589e3's m040)


def _builder():
    spec = importlib.util.spec_from_file_location("make_fixtures", DATA / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _snapshot(db: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(db)
    try:
        tables = _tables(conn)
        out = {}
        for table in DATA_TABLES:
            if table in tables:
                cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
                keep = [c for c in cols if c not in ("updated_at",)]
                out[table] = sorted((tuple(r) for r in conn.execute(f"SELECT {', '.join(keep)} FROM {table}")),
                                    key=repr)
                out[table + ":columns"] = keep
        return out
    finally:
        conn.close()


def _intact(before: dict, conn: sqlite3.Connection) -> None:
    for table in DATA_TABLES:
        if table not in before:
            continue
        cols = before[table + ":columns"]
        after = sorted((tuple(r) for r in conn.execute(f"SELECT {', '.join(cols)} FROM {table}")), key=repr)
        assert after == before[table], table


def _check_upgraded(db: Path, kbdir: Path, before: dict, tmp_path: Path) -> None:
    handle = KnowledgeBase.open(db, kb=kbdir)
    try:
        conn = handle.conn
        applied = [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert sorted(applied) == sorted(name for name, _ in migrations.MIGRATIONS)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        _intact(before, conn)
        n_docs = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        assert n_docs == len(before["documents"]) > 0
        assert conn.execute("SELECT COUNT(*) FROM documents_fts").fetchone()[0] == n_docs

        out = handle.query("reinforcement learning", options=QueryOptions(record=False))
        assert out["results"] and out["results"][0]["filepath"] == "rl/policy-gradients.md"
        assert handle.search(["transformer"])["results"][0]["filepath"] == "nlp/transformers.md"
        similar = {r["keyword"] for r in handle.similar("RL")["similar_keywords"]}
        assert "reinforcement learning" in similar

        if before.get("queries"):
            qid = before["queries"][0][0]
            assert handle.learning.history(qid)["question"] == before["queries"][0][1]
        if before.get("query_feedback"):
            shown = handle.learning.feedback_show(before["query_feedback"][0][1])
            assert shown["count"] >= 1
        if before.get("learned_items"):
            assert handle.learning.learned_list()["count"] == sum(1 for r in before["learned_items"] if "active" in r)

        relations = conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0]
        synced = handle.sync()
        assert synced["errors"] == [] and synced["added"] == 0 and synced["removed"] == 0, synced
        # the relation a person added with `relate` (origin manual) is not synced away
        assert conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0] == relations

        exported = handle.export()
    finally:
        handle.close()
    other, _ = KnowledgeBase.init(tmp_path / "copy.db", kbdir)
    try:
        other.import_(exported, force=True)
        again = other.export()
        assert again["tables"] == exported["tables"]
        assert again["migrations"] == exported["migrations"]
    finally:
        other.close()


def _copy_kb(tmp_path: Path) -> Path:
    return _builder()._kb(tmp_path / "project")


def test_there_is_a_fixture_for_every_release_of_the_builder():
    names = {f"{last}-{rev}.db" for rev, last in _builder().RELEASES.items()}
    assert names == {f.name for f in FIXTURES}


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_index_from_a_released_version_upgrades_in_place(fixture, tmp_path):
    kbdir = _copy_kb(tmp_path)
    db = tmp_path / "project" / "kbindex.db"
    shutil.copy(fixture, db)
    before = _snapshot(db)
    if fixture.name in KNOWN_BROKEN:
        with pytest.raises(sqlite3.OperationalError, match="similarity_file_entries"):
            _check_upgraded(db, kbdir, before, tmp_path)
        return
    _check_upgraded(db, kbdir, before, tmp_path)


def test_an_upgraded_index_is_opened_by_the_installed_command(tmp_path, run):
    good = [f for f in FIXTURES if f.name not in KNOWN_BROKEN]
    kbdir = _copy_kb(tmp_path)
    db = tmp_path / "project" / "kbindex.db"
    shutil.copy(good[0], db)
    res = run("query", "reinforcement learning", "--db", db, "--kb", kbdir, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert res.json()["results"][0]["filepath"] == "rl/policy-gradients.md"


# -- every prefix of MIGRATIONS ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An index written by the current code over the fixture KB, with history, feedback and learned items."""
    tmp = tmp_path_factory.mktemp("reference")
    kbdir = _builder()._kb(tmp / "project")
    handle, _ = KnowledgeBase.init(tmp / "project" / "kbindex.db", kbdir)
    try:
        assert handle.sync()["errors"] == []
        handle.import_similarities(str(tmp / "project" / "similarities.json"))
        handle.relate("arrays", "list", "related_concept", "programming", 0.6)
        out = handle.query("reinforcement learning")
        handle.learning.feedback(out["query_id"], ["rl/policy-gradients.md"], ["notes.md"], "reference")
        handle.query("transformer attention")
        handle.learning.learn()
    finally:
        handle.close()
    return tmp / "project" / "kbindex.db"


def _fill(target: sqlite3.Connection, source: Path) -> None:
    """Copy the rows of ``source`` into the tables and columns that ``target`` has."""
    target.execute("ATTACH DATABASE ? AS src", (str(source),))
    try:
        with target:
            target.execute("PRAGMA defer_foreign_keys = ON")
            tables = [r[0] for r in target.execute(
                "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND name NOT LIKE '%_fts_%' AND name NOT IN ('_migrations', 'meta') ORDER BY rowid")]
            for table in tables:
                cols = [r[1] for r in target.execute(f"PRAGMA main.table_info({table})")]
                src_cols = {r[1] for r in target.execute(f"PRAGMA src.table_info({table})")}
                if table == "documents_fts":
                    cols = ["rowid", *cols]
                    src_cols.add("rowid")
                common = ", ".join(c for c in cols if c in src_cols)
                target.execute(f"INSERT INTO main.{table} ({common}) SELECT {common} FROM src.{table}")
    finally:
        target.execute("DETACH DATABASE src")


@pytest.mark.parametrize("k", range(1, len(migrations.MIGRATIONS)),
                         ids=lambda k: f"upto-{migrations.MIGRATIONS[k - 1][0]}")
def test_index_at_every_prefix_of_the_migrations_upgrades_in_place(k, reference, tmp_path, monkeypatch):
    kbdir = _copy_kb(tmp_path)
    db = tmp_path / "project" / "kbindex.db"
    full = list(migrations.MIGRATIONS)
    monkeypatch.setattr(migrations, "MIGRATIONS", full[:k])
    conn, _ = opening.init_db(db, kbdir)
    _fill(conn, reference)
    conn.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", full)
    before = _snapshot(db)
    if "documents_fts" not in _tables(sqlite3.connect(db)):
        pytest.skip("before m002 there is no full-text index: a sync rebuilds it (checked below)")
    _check_upgraded(db, kbdir, before, tmp_path)


def test_index_before_the_fulltext_migration_gets_searchable_after_sync(reference, tmp_path, monkeypatch):
    kbdir = _copy_kb(tmp_path)
    db = tmp_path / "project" / "kbindex.db"
    full = list(migrations.MIGRATIONS)
    monkeypatch.setattr(migrations, "MIGRATIONS", full[:1])
    conn, _ = opening.init_db(db, kbdir)
    _fill(conn, reference)
    conn.close()
    monkeypatch.setattr(migrations, "MIGRATIONS", full)
    before = _snapshot(db)
    handle = KnowledgeBase.open(db, kb=kbdir)
    try:
        _intact(before, handle.conn)
        assert handle.sync()["errors"] == []
        assert handle.search(["transformer"])["results"][0]["filepath"] == "nlp/transformers.md"
    finally:
        handle.close()
