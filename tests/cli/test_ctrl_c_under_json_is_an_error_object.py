"""Ctrl-C in a command run with --format json ends with the JSON error object an agent parses (code
``interrupted``, exit 130, on stderr), not the bare ``Interrupted.`` a person reads; without it the text stays."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

# The signal arrives inside the command, as it opens the index (kb_indexer.cli.app.open_kb, which every
# command module binds when the command is first built, after this patch).
_SCRIPT = r"""
import os, signal, sys
import kb_indexer.cli.app
app = sys.modules["kb_indexer.cli.app"]   # the package's `app` attribute is the Typer app
real = app.open_kb
def open_kb(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    return real(*args, **kwargs)
app.open_kb = open_kb
from kb_indexer.cli import main
sys.argv = ["kbindex", *sys.argv[1:]]
main()
"""


def _interrupted(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _SCRIPT, *args], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.mark.parametrize("fmt", [["--format", "json"], ["-f", "json"], ["--format=json"]])
def test_json_mode_prints_the_error_object(tmp_path, fmt):
    proc = _interrupted(tmp_path, "db-stats", "--db", str(tmp_path / "kbindex.db"), *fmt)
    assert proc.returncode == 130 and proc.stdout == ""
    assert json.loads(proc.stderr) == {"error": {"code": "interrupted", "message": "Interrupted (Ctrl-C)."},
                                       "exit_code": 130}


def test_a_json_default_command_prints_it_too(tmp_path):
    proc = _interrupted(tmp_path, "export", "--db", str(tmp_path / "kbindex.db"))   # export defaults to json
    assert proc.returncode == 130 and json.loads(proc.stderr)["error"]["code"] == "interrupted"


def test_table_mode_says_interrupted(tmp_path):
    proc = _interrupted(tmp_path, "db-stats", "--db", str(tmp_path / "kbindex.db"))
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "Interrupted.\n", "")
