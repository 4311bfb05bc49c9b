"""The slow stress run carries the registered ``stress`` marker: plain ``pytest`` (the README's and CI's
command) collects it, ``-m "not stress"`` leaves it out, and every other test stays."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = ["tests/project/test_stress_quick.py", "tests/project/test_stress_checks.py"]
STRESS = "tests/project/test_stress_quick.py::test_quick_stress_has_no_failures_beyond_the_known_ones"


def _collected(*flags: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *flags, *FILES], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_plain_pytest_runs_the_stress_test_and_one_flag_skips_only_it():
    everything = _collected()
    quick = _collected("-m", "not stress")
    assert STRESS in everything and STRESS not in quick
    assert set(everything) - set(quick) == {STRESS}
    assert any(t.startswith("tests/project/test_stress_checks.py::") for t in quick)  # the fast checks stay


def test_the_marker_is_registered_for_strict_markers():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert "@pytest.mark.stress:" in proc.stdout
