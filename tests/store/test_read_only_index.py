"""A read-only index (file or folder) can still be searched, queried (the JSON says the query was not
recorded) and exported; writes fail as `read_only` with what to do, never `internal`.

Tests run as root, for whom chmod does not stop writes; the commands therefore run under
``setpriv --bounding-set=-dac_override,...``: root without the capabilities that bypass file permissions,
so a chmod-ed file and folder are really read-only for them, as for any user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.conftest import kbindex_exe

CAPS = "-dac_override,-dac_read_search,-fowner"


def _can_drop_caps(tmp_path) -> bool:
    if os.geteuid() != 0:
        return True  # an ordinary user: chmod works as it is
    if shutil.which("setpriv") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        proc = subprocess.run(["setpriv", f"--bounding-set={CAPS}", "--", "touch", str(probe / "x")],
                              capture_output=True, timeout=30)
        return proc.returncode != 0
    finally:
        probe.chmod(0o755)


@pytest.fixture
def ro_run(tmp_path):
    if not _can_drop_caps(tmp_path):
        pytest.skip("cannot run without CAP_DAC_OVERRIDE here (the mapping is tested in test_database_faults)")
    prefix = ["setpriv", f"--bounding-set={CAPS}", "--"] if os.geteuid() == 0 else []

    def _run(*args, cwd=None):
        return subprocess.run(prefix + kbindex_exe() + [str(a) for a in args], cwd=cwd, capture_output=True,
                              text=True, timeout=120)

    return _run


@pytest.fixture
def ro_project(kb):
    """The bundled KB indexed, checkpointed (no -wal/-shm left), then the index file and its folder read-only."""
    db = kb.db_path
    kb.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    kb.close()
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    db.chmod(0o444)
    db.parent.chmod(0o555)
    yield db
    db.parent.chmod(0o755)
    db.chmod(0o644)


def _error(proc):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    return json.loads(proc.stderr)["error"]


def test_read_only_folder_without_shm_can_still_be_searched_and_exported(ro_run, ro_project):
    res = ro_run("search", "reinforcement learning", "--db", ro_project, "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["count"] > 0
    res = ro_run("export", "--db", ro_project)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["tables"]["documents"]


def test_query_on_a_read_only_index_answers_and_says_it_was_not_recorded(ro_run, ro_project):
    res = ro_run("query", "reinforcement learning", "--db", ro_project, "--format", "json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["count"] > 0 and data["query_id"] is None
    assert data["history_error_code"] == "read_only"
    assert "not recorded" in data["history_error"] and "not recorded" in res.stderr


@pytest.mark.parametrize("args", [
    ["relate", "alpha", "beta", "-t", "synonym", "-c", "ctx"],
    ["sync"],
    ["feedback", "1", "--helpful", "x.md"],
], ids=["relate", "sync", "feedback"])
def test_writes_to_a_read_only_index_are_read_only_errors(ro_run, ro_project, args):
    err = _error(ro_run(*args, "--db", ro_project, "--format", "json"))
    assert err["code"] in ("read_only", "not_found"), err  # feedback on query 1: not found is fine too
    if args[0] != "feedback":
        assert err["code"] == "read_only"
        assert "writable" in err["message"]


def test_read_only_file_in_a_writable_folder(ro_run, ro_project):
    ro_project.parent.chmod(0o755)
    assert ro_run("search", "reinforcement learning", "--db", ro_project, "--format", "json").returncode == 0
    err = _error(ro_run("relate", "alpha", "beta", "-t", "synonym", "-c", "ctx", "--db", ro_project,
                        "--format", "json"))
    assert err["code"] == "read_only"

