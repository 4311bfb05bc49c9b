"""`resources/read skill://NAME/SKILL.md` does not trust the paths stored in the index (a `kbindex.db` copied
from elsewhere, or edited): a skills directory of `/`, one the user never gave, a relative folder, a folder
outside its skills directory are refused; so is a skills directory swapped for a symlink after the sync.
None of the other file's content (nor the server's environment) is returned, and the server goes on.
Over stdio, with the SDK's own client."""

from __future__ import annotations

import sqlite3

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from tests.helpers import skills_index  # noqa: E402
from tests.mcp.test_mcp_skill_resource_reads_only_its_own_file import SECRET, _read_all  # noqa: E402

NAMES = ("root-dir", "not-given", "relative", "elsewhere", "fine")


def _secret_skill(folder, name):
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: x\n---\n{SECRET}\n", encoding="utf-8")


def _tamper(db, rows):
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany("UPDATE skills SET folder = ?, source_dir = ? WHERE name = ?", rows)
    conn.close()


def test_paths_stored_in_the_index_are_checked_before_reading(tmp_path):
    db = skills_index(tmp_path, {n: f"Skill {n}" for n in NAMES})
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "SKILL.md").symlink_to("/proc/self/environ")
    _secret_skill(tmp_path / "other" / "not-given", "not-given")
    _secret_skill(tmp_path / "other" / "elsewhere", "elsewhere")
    skills = str(tmp_path / "skills")
    _tamper(db, [(str(evil), "/", "root-dir"),                                   # the reviewer's repro
                 (str(tmp_path / "other" / "not-given"), str(tmp_path / "other"), "not-given"),
                 ("skills/relative", skills, "relative"),
                 (str(tmp_path / "other" / "elsewhere"), skills, "elsewhere")])
    out = _read_all(db, [f"skill://{n}/SKILL.md" for n in NAMES])
    for name in NAMES[:-1]:
        kind, text = out[f"skill://{name}/SKILL.md"]
        assert kind == "error", (name, text[:200])
        assert SECRET not in text and "PATH=" not in text
    assert "filesystem root" in out["skill://root-dir/SKILL.md"][1]
    assert "not one of the skills directories given" in out["skill://not-given/SKILL.md"][1]
    assert "not an absolute" in out["skill://relative/SKILL.md"][1]
    assert "not a folder of its skills directory" in out["skill://elsewhere/SKILL.md"][1]
    assert out["skill://fine/SKILL.md"][0] == "ok" and "name: fine" in out["skill://fine/SKILL.md"][1]


def test_a_skills_directory_swapped_for_a_symlink_after_sync_is_not_followed(tmp_path):
    db = skills_index(tmp_path, {"pdf-tools": "Extract text from PDF files"})
    _secret_skill(tmp_path / "decoy" / "pdf-tools", "pdf-tools")
    (tmp_path / "skills").rename(tmp_path / "skills.orig")
    (tmp_path / "skills").symlink_to(tmp_path / "decoy", target_is_directory=True)
    kind, text = _read_all(db, ["skill://pdf-tools/SKILL.md"])["skill://pdf-tools/SKILL.md"]
    assert kind == "error" and SECRET not in text
    assert "symlink" in text
