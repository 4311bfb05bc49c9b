"""The tiers (tests/conftest.py): ``python -m pytest -q -m "not slow"`` leaves out the PostgreSQL tests (the
``[postgres]`` half of a both-engines module too), the real-model tests, the stress run and the tests that run
``kbindex`` as a process; ``-m postgres`` selects only the PostgreSQL half; plain ``pytest`` collects them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = ["tests/store/test_unrelate_tombstones.py", "tests/store/test_postgres_team_roles.py",
         "tests/llm/test_llm_real.py", "tests/project/test_stress_quick.py", "tests/learn/test_learn_cli.py"]


def _collected(*flags: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           *flags, *FILES], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]   # 5: all deselected
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_the_fast_loop_keeps_only_the_in_process_sqlite_tests():
    everything, fast, postgres = _collected(), _collected("-m", "not slow"), _collected("-m", "postgres")
    assert fast and set(fast) < set(everything)
    assert all(t.startswith(("tests/store/test_unrelate_tombstones.py::", "tests/learn/test_learn_cli.py::"))
               and not t.endswith("[postgres]") for t in fast), fast
    assert not any(t.startswith(("tests/llm/", "tests/project/", "tests/store/test_postgres_team_roles.py"))
                   for t in fast)
    cli = "tests/learn/test_learn_cli.py::"
    assert f"{cli}test_interactive_feedback_reviews_the_last_attempt" in fast   # in-process (CliRunner)
    assert not any(t.startswith(f"{cli}test_feedback_errors") for t in fast)             # `kbindex` as a process
    assert any(t.endswith("[postgres]") for t in postgres)
    assert all(t.endswith("[postgres]") or t.startswith("tests/store/test_postgres_team_roles.py::")
               for t in postgres), postgres


def test_the_tier_markers_are_registered_for_strict_markers():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    for marker in ("postgres", "real_model", "slow", "stress"):
        assert f"@pytest.mark.{marker}:" in proc.stdout, marker
