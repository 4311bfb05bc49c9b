"""`kbindex init` in a folder below an existing index creates a new index that commands run there find first
(the nearest one wins): it says so on stderr, naming the parent's index and how to use it. Re-running init
where an index is, or naming the new one with --db, says nothing."""

from __future__ import annotations


def test_init_in_a_subfolder_warns(run, tmp_path):
    (tmp_path / "kb" / "sub").mkdir(parents=True)
    assert run("init", "--kb", "kb", cwd=tmp_path).returncode == 0
    res = run("init", "--format", "json", cwd=tmp_path / "kb" / "sub")
    assert res.returncode == 0 and res.json()["created"] is True
    assert f"{tmp_path / 'kbindex.db'} is an index in a parent folder" in res.stderr
    assert f"--db {tmp_path / 'kbindex.db'}" in res.stderr
    again = run("init", "--format", "json", cwd=tmp_path / "kb" / "sub")
    assert again.returncode == 0 and "parent folder" not in again.stderr
    named = run("init", "--db", tmp_path / "kb" / "other.db", "--format", "json", cwd=tmp_path / "kb")
    assert named.returncode == 0 and "parent folder" not in named.stderr
