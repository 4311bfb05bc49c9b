"""Every failure is reported with a documented code and exit code, as JSON on stderr when JSON output is
asked for or is the command's default (``export``)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def db(empty_kb):
    return empty_kb.db_path


def test_export_error_is_json_under_its_json_default(run, tmp_path):
    # export's --format defaults to json, so its errors are a JSON object too (no --format on the line).
    res = run("export", "--db", tmp_path / "missing.db")
    assert res.returncode == 1
    assert res.stdout == ""
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "not_initialised"


def test_explicit_table_format_keeps_plain_errors(run, tmp_path):
    res = run("export", "--db", tmp_path / "missing.db", "--format", "table")
    assert res.returncode == 1
    assert res.stderr.startswith("Error: ")


def test_last_format_option_wins(cli, tmp_path):
    res = cli("docs", "x", "--db", tmp_path / "missing.db", "--format", "json", "-ftable")
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: ")
    res = cli("docs", "x", "--db", tmp_path / "missing.db", "--format=JSON")
    assert json.loads(res.stderr)["error"]["code"] == "not_initialised"


@pytest.mark.parametrize("command", [
    ["relate", "a", "b", "--type", "nonsense", "--context", "c"],
    ["similar", "a", "--type", "nonsense"],
    ["unrelate", "a", "b", "--type", "nonsense"],
    ["query", "a", "--types", "nonsense"],
])
def test_unknown_similarity_type_is_usage_everywhere(cli, db, command):
    res = cli(*command, "--db", db, "--format", "json")
    assert res.exit_code == 2, res.stderr
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "usage"
    assert "nonsense" in err["message"]


def test_unknown_similarity_type_through_the_installed_command(run, db):
    res = run("relate", "a", "b", "-t", "nonsense", "-c", "c", "--db", db)
    assert res.returncode == 2
    assert "Unknown similarity type 'nonsense'" in res.stderr
