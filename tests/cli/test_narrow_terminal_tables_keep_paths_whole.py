"""In a narrow terminal the query table leaves columns out (the title first, then the keywords) so that paths
are not cut mid-word; piped output and wide terminals keep every column, and the JSON always has all."""

from __future__ import annotations

import json

import pytest

QUESTION = "How do agents learn from trial and error?"


def _header(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "relevance_score" in line)


@pytest.mark.parametrize("width, shown, left_out", [
    (80, ("relevance_score", "filepath", "sources"), ("title", "matched_keywords")),
    (120, ("relevance_score", "filepath", "sources", "matched_keywords"), ("title",)),
    (240, ("relevance_score", "filepath", "title", "sources", "matched_keywords"), ()),
])
def test_columns_by_terminal_width(kb, cli, monkeypatch, width, shown, left_out):
    monkeypatch.setattr("kb_indexer.cli.results.table_width", lambda: width)
    res = cli("query", QUESTION, "--db", kb.db_path, "-n", "3")
    assert res.exit_code == 0, res.output
    header = _header(res.stdout)
    assert all(c in header for c in shown) and not any(c in header for c in left_out)
    assert "trial-and-error-learning.md" in res.stdout   # the path whole, on one line


def test_json_keeps_every_field_whatever_the_width(kb, cli, monkeypatch):
    monkeypatch.setattr("kb_indexer.cli.results.table_width", lambda: 60)
    out = json.loads(cli("query", QUESTION, "--db", kb.db_path, "-n", "3", "--format", "json").stdout)
    assert all("title" in r and "matched_keywords" in r for r in out["results"])


def test_piped_output_has_every_column(kb, run):
    res = run("query", QUESTION, "--db", kb.db_path, "-n", "3")
    assert res.returncode == 0 and "title" in _header(res.stdout)


def test_the_explain_column_takes_its_room_first(kb, cli, monkeypatch):
    monkeypatch.setattr("kb_indexer.cli.results.table_width", lambda: 170)
    plain = _header(cli("query", QUESTION, "--db", kb.db_path, "-n", "3").stdout)
    explained = _header(cli("query", QUESTION, "--db", kb.db_path, "-n", "3", "--explain").stdout)
    assert "title" in plain and "title" not in explained and "score_parts" in explained
