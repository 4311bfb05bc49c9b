"""`resources/read skill://<name>/SKILL.md` reads the file by the rule of `skills sync`: after the sync, a
SKILL.md swapped for a symlink to a file outside the skills folder (or the process's environment), a skill
folder swapped for a symlink leading outside, and a huge SKILL.md are each an error with none of the
other file's content, and the server goes on. Over stdio, with the SDK's own client."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from mcp.shared.exceptions import MCPError  # noqa: E402

from kb_indexer.skills.parse import MAX_SKILL_BYTES  # noqa: E402
from tests.helpers import skills_index  # noqa: E402
from tests.mcp_client import session  # noqa: E402

SECRET = "TOP-SECRET-OUTSIDE-THE-SKILLS-FOLDER"


def _read_all(db, uris):
    async def body(s):
        out = {}
        for uri in uris:
            try:
                out[uri] = ("ok", (await s.read_resource(uri)).contents[0].text)
            except MCPError as exc:
                out[uri] = ("error", str(exc))
        return out
    return session(db, body)


@pytest.fixture
def skills_db(tmp_path):
    return skills_index(tmp_path, {"pdf-tools": ("Extract text from PDF files", "Use pdftotext."),
                                   "git-helper": "Write commit messages", "csv-tools": "Clean CSV files",
                                   "big-one": "A skill that grows"})


def test_a_skill_file_swapped_for_a_symlink_after_sync_is_not_followed(tmp_path, skills_db):
    outside = tmp_path / "outside.txt"
    outside.write_text(f"---\nname: pdf-tools\ndescription: x\n---\n{SECRET}\n", encoding="utf-8")
    skill_md = tmp_path / "skills" / "pdf-tools" / "SKILL.md"
    skill_md.unlink()
    skill_md.symlink_to(outside)
    env_md = tmp_path / "skills" / "git-helper" / "SKILL.md"
    env_md.unlink()
    env_md.symlink_to("/proc/self/environ")
    folder = tmp_path / "skills" / "csv-tools"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "SKILL.md").write_text(f"---\nname: csv-tools\ndescription: x\n---\n{SECRET}\n")
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    out = _read_all(skills_db, ["skill://pdf-tools/SKILL.md", "skill://git-helper/SKILL.md",
                                "skill://csv-tools/SKILL.md", "skill://big-one/SKILL.md"])
    for name in ("pdf-tools", "git-helper", "csv-tools"):
        kind, text = out[f"skill://{name}/SKILL.md"]
        assert kind == "error", (name, text[:200])
        assert "outside the skills directory" in text
        assert SECRET not in text and "PATH=" not in text
    assert out["skill://big-one/SKILL.md"][0] == "ok"   # the server went on
    assert "name: big-one" in out["skill://big-one/SKILL.md"][1]


def test_a_huge_skill_file_is_refused_without_reading_it(tmp_path, skills_db):
    skill_md = tmp_path / "skills" / "big-one" / "SKILL.md"
    with open(skill_md, "ab") as fh:            # 8 times the limit: refused on its size, before any read
        fh.write(b"filler line of a skill that grew far too long\n" * (8 * MAX_SKILL_BYTES // 46))
    out = _read_all(skills_db, ["skill://big-one/SKILL.md", "skill://pdf-tools/SKILL.md"])
    kind, text = out["skill://big-one/SKILL.md"]
    assert kind == "error" and f"larger than {MAX_SKILL_BYTES} bytes" in text
    assert out["skill://pdf-tools/SKILL.md"][0] == "ok"


def test_a_skill_file_replaced_by_a_fifo_is_refused_not_waited_on(tmp_path, skills_db):
    skill_md = tmp_path / "skills" / "pdf-tools" / "SKILL.md"
    skill_md.unlink()
    os.mkfifo(skill_md)
    kind, text = _read_all(skills_db, ["skill://pdf-tools/SKILL.md"])["skill://pdf-tools/SKILL.md"]
    assert kind == "error" and "pdf-tools" in text
