"""A sync that finds none of the indexed documents (a one-off ``--kb`` to another folder, an unmounted disk, an
index re-pointed by ``init --kb``) would remove every document with what was learned about it: it is refused
(``would_remove_all``), nothing written; ``--force`` removes them. Moving every document (a folder renamed)
is a rename, not a removal, and a sync that still finds one of them removes the others as before."""

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
