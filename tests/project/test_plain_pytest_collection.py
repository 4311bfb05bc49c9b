"""Plain `pytest` (the console script, which does not put the current folder on sys.path) collects every
test file, as `python -m pytest` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_plain_pytest_collects_every_test_file():
    # -P: like the `pytest` console script, the current folder is not put on sys.path.
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "error" not in proc.stdout.splitlines()[-1].lower()
    assert "tests/index/test_indexing.py::" in proc.stdout
