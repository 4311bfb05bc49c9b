"""`kbindex init` in a table shows the migrations it applied as a count with the first and last name (the
full list made the table as wide as all fourteen names); the JSON keeps every name."""

from __future__ import annotations


def test_the_table_counts_the_migrations_and_the_json_names_them(run, tmp_path):
    (tmp_path / "knowledge-base").mkdir()
    table = run("init", "--db", tmp_path / "kbindex.db", "--kb", tmp_path / "knowledge-base")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if "migrations_applied" in line)
    assert "m001_core …" in row and "m060_sync_state" not in row

    again = run("init", "--db", tmp_path / "b.db", "--kb", tmp_path / "knowledge-base", "--format", "json")
    names = again.json()["migrations_applied"]
    assert names[0] == "m001_core" and "m060_sync_state" in names
    shown = row.split("│")[2].strip()
    assert shown == f"{len(names)} ({names[0]} … {names[-1]})"
    assert len(shown) < len(", ".join(names)) / 3


def test_suggest_similarities_says_what_no_llm_leaves(cli):
    out = cli("suggest-similarities", "--help").stdout
    assert "keyphrase extractor" not in out
    assert "abbreviations" in out
