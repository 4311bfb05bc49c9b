"""A sync that finds none of the indexed documents (a one-off ``--kb`` to another folder, an unmounted disk, an
index re-pointed by ``init --kb``) would remove every document with what was learned about it: it is refused
(``would_remove_all``), nothing written, when the root holds no document or when at least ``WIPE_MIN`` would go;
``--force`` removes them. Moving every document (a folder renamed) is a rename, not a removal; a sync that still
finds one of them removes the others as before, and a small knowledge base may replace its notes."""

from __future__ import annotations

import pytest

from kb_indexer.errors import KbError

pytestmark = pytest.mark.both_engines


def _docs(handle) -> int:
    return handle.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]


@pytest.fixture
def three(small):
    handle, kbdir = small
    for name in ("a", "b", "c"):
        (kbdir / f"{name}.md").write_text(f"# {name}\n\n{name} text about zebras\n", encoding="utf-8")
    assert handle.sync()["added"] == 3
    return handle, kbdir


def test_an_empty_root_removes_nothing_unless_forced(three):
    handle, kbdir = three
    for name in ("a", "b", "c"):
        (kbdir / f"{name}.md").unlink()
    with pytest.raises(KbError) as err:
        handle.sync()
    assert err.value.code == "would_remove_all" and "sync --force" in err.value.message
    assert _docs(handle) == 3
    assert handle.sync(force=True)["removed"] == 3 and _docs(handle) == 0


def test_moved_documents_are_renamed_and_one_left_is_enough(three):
    handle, kbdir = three
    (kbdir / "sub").mkdir()
    for name in ("a", "b", "c"):
        (kbdir / f"{name}.md").rename(kbdir / "sub" / f"{name}.md")
    res = handle.sync()
    assert res["renamed"] == 3 and res["removed"] == 0
    (kbdir / "sub" / "a.md").unlink()
    (kbdir / "sub" / "b.md").unlink()
    assert handle.sync()["removed"] == 2


def test_the_command_line_with_another_root(three, run, cli, tmp_path):
    handle, _ = three
    other = tmp_path / "empty"
    other.mkdir()
    res = run("sync", "--db", handle.db_path, "--kb", other, "--format", "json")
    assert res.returncode == 1 and res.error()["code"] == "would_remove_all" and res.stdout == ""
    table = cli("sync", "--db", str(handle.db_path), "--kb", str(other))
    assert table.exit_code == 1 and "would remove them all" in table.stderr
    assert _docs(handle) == 3
    forced = run("sync", "--db", handle.db_path, "--kb", other, "--force", "--format", "json")
    assert forced.returncode == 0 and forced.json()["removed"] == 3


def test_a_root_of_other_documents_is_refused_but_a_small_kb_may_replace_its_notes(small):
    handle, kbdir = small
    from kb_indexer.index.sync import WIPE_MIN

    for i in range(WIPE_MIN):
        (kbdir / f"d{i}.md").write_text(f"# D{i}\n\nold note {i}\n", encoding="utf-8")
    handle.sync()
    for i in range(WIPE_MIN):
        (kbdir / f"d{i}.md").unlink()
        (kbdir / f"n{i}.md").write_text(f"# N{i}\n\nanother subject {i}\n", encoding="utf-8")
    with pytest.raises(KbError, match="would remove them all"):
        handle.sync()
    assert handle.sync(force=True)["removed"] == WIPE_MIN
    for i in range(1, WIPE_MIN):
        (kbdir / f"n{i}.md").unlink()
    handle.sync(force=True)
    (kbdir / "n0.md").unlink()
    (kbdir / "fresh.md").write_text("# Fresh\n\nnew start\n", encoding="utf-8")
    res = handle.sync()      # one note replaced by another: as before
    assert (res["removed"], res["added"]) == (1, 1)


def test_emptying_one_folder_and_syncing_it_removes_its_notes(small):
    handle, kbdir = small
    for rel in ("a/a1.md", "a/a2.md", "b/b.md"):
        (kbdir / rel).parent.mkdir(exist_ok=True)
        (kbdir / rel).write_text(f"# {rel}\n\ntext\n", encoding="utf-8")
    handle.sync()
    (kbdir / "b" / "b.md").unlink()
    assert handle.sync(str(kbdir / "b"))["removed"] == 1
