"""The short subset of the stress suite in CI: ``bench/stress.py --quick`` in a subprocess, 0 failures.

bench/stress.py runs every command through the installed ``kbindex``: a few seconds of 8 concurrent
processes, 3 kill -9 trials each of sync (2k documents), learn and import, all hostile cases, and the LLM
fault suite when bench/stress_llm.py exists.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Minutes of subprocesses: plain `pytest` (CI) runs it, `pytest -m "not stress"` skips it locally.
pytestmark = pytest.mark.stress

# Cases that fail on this branch because their fixes are being made in parallel on other branches (issue 17).
# The test is strict both ways: a new failure fails it, and so does a listed case that passes (delete it from
# here). The integrator empties this set at merge.
KNOWN_FAILURES: set[str] = set()


def test_quick_stress_has_no_failures_beyond_the_known_ones(tmp_path):
    summary = tmp_path / "stress.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "stress.py"), "--quick", "--json", str(summary)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert summary.exists(), proc.stderr[-3000:]
    data = json.loads(summary.read_text(encoding="utf-8"))
    failed = set(data["failed"])
    assert proc.returncode == (1 if failed else 0), proc.stderr[-3000:]
    assert data["sections"]["hostile"]["cases"] >= 15 and data["sections"]["kill"]["cases"] == 9
    assert data["sections"]["mix"]["cases"] > 0
    details = {name: s["failures"] for name, s in data["sections"].items() if s["failures"]}
    assert failed - KNOWN_FAILURES == set(), json.dumps(details, indent=1)[:6000]
    assert KNOWN_FAILURES - failed == set(), "these now pass; remove them from KNOWN_FAILURES"
