"""`skills sync`: folders of SKILL.md indexed incrementally, errors and duplicates reported, dirs remembered."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from kb_indexer.errors import KbError, NotFoundError, UsageError

pytestmark = pytest.mark.both_engines


def write(root: Path, folder: str, name: str, description: str, body: str = "") -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}", encoding="utf-8")
    return d


@pytest.fixture
def skills_dir(tmp_path):
    root = tmp_path / "skills"
    write(root, "alpha", "alpha", "Alpha things", "# Alpha\nUse alpha.")
    write(root, "beta", "beta", "Beta things")
    return root


def test_first_sync_adds_and_second_changes_nothing(small, skills_dir):
    k, _ = small
    out = k.skills.sync([str(skills_dir)])
    assert out["added"] == ["alpha", "beta"] and out["errors"] == [] and out["skills"] == 2
    again = k.skills.sync()
    assert again["added"] == again["updated"] == again["removed"] == [] and again["unchanged"] == 2
    shown = k.skills.show("alpha")
    assert shown["body"] == "# Alpha\nUse alpha." and shown["file"].endswith("alpha/SKILL.md")


def test_changed_file_is_updated_and_removed_folder_drops_its_skill(small, skills_dir):
    k, _ = small
    k.skills.sync([str(skills_dir)])
    write(skills_dir, "alpha", "alpha", "Alpha, rewritten")
    (skills_dir / "beta" / "SKILL.md").unlink()
    (skills_dir / "beta").rmdir()
    out = k.skills.sync()
    assert out["updated"] == ["alpha"] and out["removed"] == ["beta"]
    assert [s["name"] for s in k.skills.all()["skills"]] == ["alpha"]
    assert k.skills.show("alpha")["description"] == "Alpha, rewritten"


def test_invalid_file_is_reported_and_skipped(small, skills_dir):
    k, _ = small
    (skills_dir / "broken").mkdir()
    (skills_dir / "broken" / "SKILL.md").write_bytes(b"---\nname: broken\ndescription: caf\xe9\n---\n")
    write(skills_dir, "nodesc", "nodesc", "")
    out = k.skills.sync([str(skills_dir)])
    assert out["added"] == ["alpha", "beta"]
    files = {Path(e["file"]).parent.name: e["message"] for e in out["errors"]}
    assert "not UTF-8" in files["broken"] and "description" in files["nodesc"]


def test_duplicate_names_are_reported_first_folder_wins(small, skills_dir):
    k, _ = small
    write(skills_dir, "gamma", "alpha", "Another alpha")
    out = k.skills.sync([str(skills_dir)])
    assert out["duplicates"] == [{"name": "alpha", "kept": str(skills_dir / "alpha"),
                                  "skipped": str(skills_dir / "gamma")}]
    assert any("duplicate skill name" in e["message"] for e in out["errors"])
    assert k.skills.show("alpha")["description"] == "Alpha things"


def test_symlink_outside_the_directory_is_refused(small, skills_dir, tmp_path):
    k, _ = small
    outside = write(tmp_path / "elsewhere", "evil", "evil", "Outside skill")
    (skills_dir / "evil").symlink_to(outside)
    out = k.skills.sync([str(skills_dir)])
    assert "evil" not in out["added"]
    assert any("outside the skills directory" in e["message"] for e in out["errors"])


def test_env_dirs_are_read_and_given_dirs_remembered(small, skills_dir, tmp_path, monkeypatch):
    k, _ = small
    other = tmp_path / "env-skills"
    write(other, "delta", "delta", "Delta from the environment")
    monkeypatch.setenv("KBINDEX_SKILLS", str(other))
    out = k.skills.sync([str(skills_dir)])
    assert out["added"] == ["alpha", "beta", "delta"]
    listed = k.skills.all()
    assert [d["path"] for d in listed["dirs"]] == [str(skills_dir)] and listed["env_dirs"] == [str(other)]


def test_no_directory_at_all_is_a_usage_error_and_a_missing_one_not_found(small, tmp_path):
    k, _ = small
    with pytest.raises(UsageError):
        k.skills.sync()
    with pytest.raises(NotFoundError):
        k.skills.sync([str(tmp_path / "nope")])


def test_missing_remembered_dir_keeps_its_skills_and_says_so(small, skills_dir):
    k, _ = small
    k.skills.sync([str(skills_dir)])
    skills_dir.rename(skills_dir.with_name("moved-away"))
    out = k.skills.sync()
    assert out["removed"] == [] and out["skills"] == 2
    assert any("not found" in e["message"] for e in out["errors"])


def test_remove_drops_one_skill(small, skills_dir):
    k, _ = small
    k.skills.sync([str(skills_dir)])
    assert k.skills.remove("beta")["action"] == "removed"
    with pytest.raises(NotFoundError):
        k.skills.show("beta")


def test_sync_writes_in_one_transaction(small, skills_dir, monkeypatch):
    """A failure while writing leaves the index as it was (nothing half-synced)."""
    k, _ = small
    from kb_indexer.skills import sync as mod

    calls = []

    def failing(conn, f):
        calls.append(f)
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        real(conn, f)

    real = mod._write
    monkeypatch.setattr(mod, "_write", failing)
    with pytest.raises(KbError) as info:  # mapped like every API error (io_error)
        k.skills.sync([str(skills_dir)])
    assert info.value.code == "io_error"
    monkeypatch.setattr(mod, "_write", real)
    assert k.skills.all()["count"] == 0 and k.skills.all()["dirs"] == []


def test_special_files_named_skill_md_are_reported_not_skipped_silently(small, skills_dir):
    import os

    k, _ = small
    (skills_dir / "fifo").mkdir()
    os.mkfifo(skills_dir / "fifo" / "SKILL.md")          # never opened: a sync would block on it
    (skills_dir / "dir" / "SKILL.md").mkdir(parents=True)
    (skills_dir / "dangling").mkdir()
    (skills_dir / "dangling" / "SKILL.md").symlink_to(skills_dir / "nowhere.md")
    (skills_dir / "no-skill-here").mkdir()                # a folder without SKILL.md is not a skill
    out = k.skills.sync([str(skills_dir)])
    assert out["added"] == ["alpha", "beta"]
    files = {Path(e["file"]).parent.name: e["message"] for e in out["errors"]}
    assert set(files) == {"fifo", "dir", "dangling"}
    assert "a FIFO" in files["fifo"] and "a folder" in files["dir"] and "dangling symlink" in files["dangling"]


def test_a_huge_skill_md_is_refused_from_its_size_without_reading_it(small, skills_dir, monkeypatch):
    k, _ = small
    with open(skills_dir / "alpha" / "SKILL.md", "r+b") as fh:
        fh.truncate(300 * 1024 * 1024)                    # sparse: 300 MB on paper
    read = []
    real_read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real_read_bytes(self))
    out = k.skills.sync([str(skills_dir)])
    assert out["added"] == ["beta"] and read == []
    assert any("larger than 1000000 bytes (314572800)" in e["message"] for e in out["errors"])


def test_renaming_a_skill_reports_the_old_name_removed(small, skills_dir):
    k, _ = small
    k.skills.sync([str(skills_dir)])
    write(skills_dir, "alpha", "alpha-two", "Alpha things")
    out = k.skills.sync()
    assert out["added"] == ["alpha-two"] and out["removed"] == ["alpha"] and out["updated"] == []
    assert [s["name"] for s in k.skills.all()["skills"]] == ["alpha-two", "beta"]


def test_a_skill_dropped_by_sync_leaves_every_session(small, skills_dir):
    import shutil

    k, _ = small
    write(skills_dir, "tv", "samsung-smart-tv", "Control Samsung smart TVs, power and volume.")
    k.skills.sync([str(skills_dir)])
    assert k.skills.match("turn the samsung tv off", session="s")["session"]["loaded"] == ["samsung-smart-tv"]
    shutil.rmtree(skills_dir / "tv")
    assert k.skills.sync()["removed"] == ["samsung-smart-tv"]
    shown = k.skills.session("s")
    assert shown["loaded"] == [] and shown["skills"] == []
    assert k.skills.load("s")["left_out"] == []


def test_tokens_of_an_older_tokenizer_are_computed_again_by_the_next_sync(small, tmp_path):
    from kb_indexer.skills.terms import VERSION

    handle, _ = small
    root = tmp_path / "old-tokens"
    (root / "meetings").mkdir(parents=True)
    (root / "meetings" / "SKILL.md").write_text("---\nname: meetings\ndescription: Meeting recordings.\n---\n",
                                                encoding="utf-8")
    handle.skills.sync([str(root)])
    skill_id, stored = handle.conn.execute("SELECT id, terms FROM skills").fetchone()
    handle.conn.execute("UPDATE skills SET terms = ? WHERE id = ?",
                        (json.dumps({**json.loads(stored), "v": VERSION - 1, "name": ["old"]}), skill_id))
    out = handle.skills.sync()
    assert out["unchanged"] == 1 and out["updated"] == []   # the file did not change: nothing to report
    terms = json.loads(handle.conn.execute("SELECT terms FROM skills").fetchone()[0])
    assert terms["v"] == VERSION and terms["name"] == ["meet"]
