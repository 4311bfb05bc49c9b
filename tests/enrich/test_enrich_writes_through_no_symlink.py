"""Files kbindex writes in the knowledge base (and with ``--output``) go to a fresh, unpredictable temporary
file (O_EXCL) renamed over the target: a symlink planted at a temporary path is never followed, and a
keywords file that is a symlink is refused (reported in the command's result), never written through or
replaced."""

from __future__ import annotations

import json
import os

import pytest

from helpers import write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import ValidationError
from kb_indexer.safe_write import write_atomic

TEXT = "# Turbulence\n\nBoundary layers and turbulence models: k-epsilon, k-omega and large eddy simulation.\n"
VICTIM = "precious: do not overwrite\n"


@pytest.fixture
def kbase(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "a.md", TEXT)
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    handle.sync()
    yield handle
    handle.close()


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(VICTIM, encoding="utf-8")
    return path


def test_a_symlink_planted_at_the_old_temporary_path_is_not_followed(kbase, victim):
    planted = kbase.kb_root / f".a.keywords.json.{os.getpid()}.tmp"  # the name enrich used to write through
    planted.symlink_to(victim)
    out = kbase.enrich.documents(["a.md"], use_llm=False)
    assert out["documents"][0]["action"] == "enriched"
    assert victim.read_text(encoding="utf-8") == VICTIM
    written = kbase.kb_root / "a.keywords.json"
    assert not written.is_symlink() and json.loads(written.read_text(encoding="utf-8"))["generated"]
    assert [p.name for p in kbase.kb_root.iterdir() if p.name.endswith(".tmp")] == [planted.name]


@pytest.mark.parametrize("target", ["outside-existing", "outside-dangling", "inside"])
def test_a_keywords_file_that_is_a_symlink_is_refused_and_left_as_it_is(kbase, victim, target):
    inside = kbase.kb_root / "shared" / "common.json"
    inside.parent.mkdir()
    body = json.dumps({"filepath": "a.md", "summary": "s", "keywords": ["planted"]})
    for path in (victim, inside):
        path.write_text(body, encoding="utf-8")
    dest = {"outside-existing": victim, "outside-dangling": victim.with_name("new.json"), "inside": inside}[target]
    link = kbase.kb_root / "a.keywords.json"
    link.symlink_to(dest)
    out = kbase.enrich.documents(["a.md"], use_llm=False, force=True)
    doc = out["documents"][0]
    assert doc["action"] == "failed" and out["failed"] == 1
    assert ("outside" in doc["error"]) if target.startswith("outside") else ("symlink" in doc["error"])
    assert link.is_symlink() and os.readlink(link) == str(dest)
    assert victim.read_text(encoding="utf-8") == body and inside.read_text(encoding="utf-8") == body
    assert not victim.with_name("new.json").exists()


def test_export_output_does_not_write_through_a_planted_temporary_file(kbase, victim, cli):
    target = victim.parent / "export.json"
    (victim.parent / "export.json.tmp").symlink_to(victim)   # the name `export --output` used to write through
    res = cli("export", "--output", str(target), "--db", str(kbase.db_path), "--format", "json")
    assert res.exit_code == 0, res.output
    assert victim.read_text(encoding="utf-8") == VICTIM
    assert "tables" in json.loads(target.read_text(encoding="utf-8"))


def test_the_safe_write_refuses_a_symlink_or_a_folder_outside_the_root(tmp_path, victim):
    root = tmp_path / "kb"
    root.mkdir()
    (root / "link.json").symlink_to(victim)
    (root / "out").symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(ValidationError, match="symlink"):
        write_atomic(root / "link.json", "x", root=root)
    with pytest.raises(ValidationError, match="outside") as exc:
        write_atomic(root / "out" / "new.json", "x", root=root)
    assert exc.value.code == "outside_kb"
    assert victim.read_text(encoding="utf-8") == VICTIM and not (victim.parent / "new.json").exists()
    assert sorted(p.name for p in root.iterdir()) == ["link.json", "out"]  # no temporary file left behind


def test_a_rewritten_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "kb" / "a.keywords.json"
    path.parent.mkdir()
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o640)
    write_atomic(path, '{"new": true}', root=path.parent)
    assert path.read_text(encoding="utf-8") == '{"new": true}' and (path.stat().st_mode & 0o777) == 0o640
