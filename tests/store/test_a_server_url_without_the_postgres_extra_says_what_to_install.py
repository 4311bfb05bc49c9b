"""A ``postgresql://`` index without the postgres extra installed is a ``missing_extra`` error naming what to
install, for every command (``query`` and ``init`` said "ModuleNotFoundError ... This is a bug in kbindex"): the
process here runs kbindex with psycopg hidden, as an install without the extra has it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
URL = "postgresql://u:pw@127.0.0.1:1/db"
HIDDEN = ("import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None; "
          f"sys.path.insert(0, {str(REPO)!r}); from kb_indexer.cli import main; sys.argv = ['kbindex'] + sys.argv[1:]; "
          "main()")


@pytest.mark.parametrize("args", [["query", "x"], ["init"], ["list-docs"], ["search", "rl"], ["mcp"]],
                         ids=lambda a: a[0])
def test_every_command_names_the_extra(tmp_path, args):
    proc = subprocess.run([sys.executable, "-c", HIDDEN, *args, "--db", URL, "--format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "missing_extra" and "pip install 'kbindex[postgres]'" in error["message"]
    assert "pw" not in error["message"]
