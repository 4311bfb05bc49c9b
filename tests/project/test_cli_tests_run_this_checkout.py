"""The tests and the stress suite run this checkout's ``kbindex``, never whatever is first on PATH (a stale
global install would be the one tested)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kb_indexer import __version__
from tests.conftest import REPO, kbindex_exe

sys.path.insert(0, str(REPO))
from bench import stress_common, stress_llm  # noqa: E402


@pytest.fixture
def stale_on_path(tmp_path, monkeypatch):
    """A fake ``kbindex`` first on PATH that leaves a mark when it runs."""
    bin_dir, mark = tmp_path / "stale-bin", tmp_path / "stale-ran"
    bin_dir.mkdir()
    fake = bin_dir / "kbindex"
    fake.write_text(f"#!/bin/sh\ntouch '{mark}'\necho 'stale 0.0.1'\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    return mark


def test_the_run_fixture_ignores_a_stale_kbindex_on_path(run, stale_on_path):
    res = run("--version")
    assert res.returncode == 0 and __version__ in res.stdout and "stale" not in res.stdout
    assert not stale_on_path.exists()


@pytest.mark.parametrize("command", [kbindex_exe, stress_common.kbindex_cmd, stress_llm.kbindex_cmd])
def test_every_helper_resolves_to_this_checkout(command, stale_on_path):
    argv = command()
    assert argv == [sys.executable, str(REPO / "kbindex.py")]
    proc = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and __version__ in proc.stdout
    assert not stale_on_path.exists()


# argv[0] of a process a test starts: "kbindex" as a bare name, or shutil.which("kbindex")
_BARE = re.compile(r"""(?:\[|\(|=)\s*["']kbindex["']\s*,|which\(\s*["']kbindex["']\s*\)""")


def test_no_test_or_stress_script_starts_kbindex_by_name():
    """(bench/foundation.py times the installed console script on purpose: it is what users start.)"""
    scripts = [*(REPO / "tests").rglob("*.py"), *(REPO / "bench").glob("stress*.py")]
    offenders = [f"{path.relative_to(REPO)}:{n}: {line.strip()}"
                 for path in sorted(scripts) if path != Path(__file__).resolve()
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if _BARE.search(line) and "sys.argv" not in line]
    assert offenders == []
