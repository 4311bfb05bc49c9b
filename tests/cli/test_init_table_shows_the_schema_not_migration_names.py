"""`kbindex init` in a table says the schema is up to date and how many migrations it applied; the migrations'
names are internals of the index, listed in the JSON only."""

from __future__ import annotations


def test_the_table_says_the_schema_is_up_to_date_and_the_json_names_the_migrations(run, tmp_path):
    (tmp_path / "knowledge-base").mkdir()
    table = run("init", "--db", tmp_path / "kbindex.db", "--kb", tmp_path / "knowledge-base")
    assert table.returncode == 0, table.stderr
    assert "migrations_applied" not in table.stdout and "m001_core" not in table.stdout

    again = run("init", "--db", tmp_path / "b.db", "--kb", tmp_path / "knowledge-base", "--format", "json")
    names = again.json()["migrations_applied"]
    assert names[0] == "m001_core" and "m060_sync_state" in names
    assert _row(table.stdout, "schema") == f"up to date ({len(names)} migrations applied)"
    upgraded = run("init", "--db", tmp_path / "kbindex.db", "--kb", tmp_path / "knowledge-base")
    assert _row(upgraded.stdout, "schema") == "up to date"        # nothing left to apply


def _row(table: str, key: str) -> str:
    return next(cells[2].strip() for line in table.splitlines()
                if len(cells := line.split("│")) > 2 and cells[1].strip() == key)


def test_suggest_similarities_says_what_no_llm_leaves(cli):
    out = cli("suggest-similarities", "--help").stdout
    assert "keyphrase extractor" not in out
    assert "abbreviations" in out
