"""`python -m bench`: the suites listed and run through one harness, their data found under one root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_the_list_names_each_suite_with_what_it_measures_and_no_helper():
    out = _bench("--list")
    assert out.returncode == 0, out.stderr
    listed = dict(line.split(None, 1) for line in out.stdout.splitlines())
    assert {"scale", "cold_start", "ir_eval", "stress", "team", "poisoning"} <= set(listed)
    assert not {"cranfield", "data", "revision", "synth_kb", "scale_corpus", "stress_common"} & set(listed)
    assert listed["scale"].startswith("Scale benchmark: a realistic synthetic knowledge base")


def test_an_unknown_suite_is_bad_usage():
    out = _bench("nosuch")
    assert out.returncode == 2 and out.stdout == ""
    assert "unknown suite 'nosuch'" in out.stderr and "--list" in out.stderr


def test_a_baseline_for_a_suite_that_compares_no_checkouts_is_bad_usage():
    out = _bench("ir_eval", "--baseline", "main")
    assert out.returncode == 2 and "does not compare checkouts" in out.stderr


def test_a_suite_runs_with_its_own_arguments():
    out = _bench("cold_start", "--help")
    assert out.returncode == 0, out.stderr
    assert "--baseline-rev" in out.stdout and "Cold start of the agent path" in out.stdout


def test_the_baseline_is_given_in_the_form_each_suite_takes():
    from bench.__main__ import baseline_flag

    assert baseline_flag("cold_start") == "--baseline-rev"
    assert baseline_flag("scale") == "--baseline-src"
    assert baseline_flag("ir_eval") is None


def test_the_data_sets_are_found_under_one_root(monkeypatch, tmp_path):
    from bench import data

    monkeypatch.delenv("KBINDEX_BENCH_DATA", raising=False)
    assert data.data_dir("cranfield") == REPO.parent / "shared" / "data" / "cranfield"
    monkeypatch.setenv("KBINDEX_BENCH_DATA", str(tmp_path))
    assert data.data_dir("skills") == tmp_path / "skills"
