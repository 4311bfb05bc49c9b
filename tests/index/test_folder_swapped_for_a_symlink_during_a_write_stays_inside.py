"""A file kbindex writes in the knowledge base stays in it even when a folder on its way is swapped for a
symlink to an outside folder while the write is under way (the check-then-use race an attacker who can
write in the knowledge base plays with ``renameat2(RENAME_EXCHANGE)`` in a loop).

The swap is made deterministic: it happens at the exact moment the temporary file is created (the
``os.open`` with ``O_CREAT | O_EXCL``), or once it is open (``os.fdopen``), i.e. after any check of the
path. The write must then land in the real folder (moved aside, still inside the root), create nothing
outside, and leave no temporary file behind."""

from __future__ import annotations

import os

import pytest

from kb_indexer.errors import ValidationError
from kb_indexer.safe_write import atomic_file, write_atomic

BODY = '{"new": true}\n'


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "kb"
    (root / "notes").mkdir(parents=True)
    outside = tmp_path / "victim"
    outside.mkdir()
    return root, outside


def _swap(root, outside) -> None:
    """``notes`` becomes a symlink to the outside folder; the real folder is moved aside (inside the root)."""
    os.rename(root / "notes", root / "notes.real")
    os.symlink(outside, root / "notes", target_is_directory=True)


def _swap_at(monkeypatch, name: str, when, root, outside) -> None:
    real = getattr(os, name)
    done = []

    def hooked(*args, **kwargs):
        if not done and when(*args, **kwargs):
            done.append(True)
            _swap(root, outside)
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, hooked)


def _everything(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_folder_swapped_when_the_temporary_file_is_created_writes_nothing_outside(tree, monkeypatch):
    root, outside = tree
    creating = lambda path, flags, *a, **k: bool(flags & os.O_CREAT and flags & os.O_EXCL)  # noqa: E731
    _swap_at(monkeypatch, "open", creating, root, outside)
    write_atomic(root / "notes" / "d10.keywords.json", BODY, root=root)
    monkeypatch.undo()
    assert _everything(outside) == []                                   # nothing written outside the root
    assert (root / "notes.real" / "d10.keywords.json").read_text(encoding="utf-8") == BODY
    assert _everything(root) == ["notes", "notes.real", "notes.real/d10.keywords.json"]  # no temporary file


def test_a_folder_swapped_once_the_temporary_file_is_open_leaves_no_temporary_file(tree, monkeypatch):
    root, outside = tree
    _swap_at(monkeypatch, "fdopen", lambda *a, **k: True, root, outside)
    write_atomic(root / "notes" / "d10.keywords.json", BODY, root=root)
    monkeypatch.undo()
    assert _everything(outside) == []
    assert _everything(root) == ["notes", "notes.real", "notes.real/d10.keywords.json"]


def test_a_folder_that_is_a_symlink_is_refused_even_when_it_leads_inside_the_root(tree):
    root, _ = tree
    (root / "alias").symlink_to(root / "notes", target_is_directory=True)
    with pytest.raises(ValidationError, match="symlink") as exc:
        write_atomic(root / "alias" / "a.keywords.json", BODY, root=root)
    assert exc.value.code == "outside_kb"
    assert _everything(root) == ["alias", "notes"]


def test_a_failed_write_leaves_the_target_as_it_was_and_no_temporary_file(tree):
    root, _ = tree
    target = root / "notes" / "a.keywords.json"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError):
        with atomic_file(target, root=root) as fh:
            fh.write(b"half of it")
            raise RuntimeError("disk gone")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert _everything(root) == ["notes", "notes/a.keywords.json"]


def test_outside_a_knowledge_base_a_target_that_is_a_symlink_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    target = tmp_path / "out" / "export.json"
    target.parent.mkdir()
    target.symlink_to(victim)
    write_atomic(target, BODY)                                  # e.g. `export --output`: any folder the user names
    assert victim.read_text(encoding="utf-8") == "precious\n"
    assert not target.is_symlink() and target.read_text(encoding="utf-8") == BODY
    assert sorted(p.name for p in target.parent.iterdir()) == ["export.json"]
