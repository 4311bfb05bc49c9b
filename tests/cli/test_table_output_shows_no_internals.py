"""The tables people read leave out what is only for agents (the JSON keeps every documented key): sync shows no
empty errors/warnings/renames rows and no batch count, and stays narrow when piped; query's footer has no per-source
counts or attempt id; `export --format table` prints a table, not the JSON dump."""

from __future__ import annotations

import json

from tests.helpers import kw, write_doc


def _cells(table: str) -> dict[str, str]:
    """A key/value table's rows."""
    return {cells[1].strip(): cells[2].strip() for line in table.splitlines()
            if len(cells := line.split("│")) > 2 and cells[1].strip()}


def _synced(run, tmp_path):
    kbdir = tmp_path / "knowledge-base"
    write_doc(kbdir, "a.md", "# A\n\nalpha text about tokenizers\n", kw("s", "alpha"))
    write_doc(kbdir, "b.md", "# B\n\nbeta text\n")
    assert run("init").returncode == 0
    return kbdir


def test_the_sync_table_has_no_empty_rows_and_no_batch_count(run, tmp_path):
    _synced(run, tmp_path)
    res = run("sync")
    assert res.returncode == 0, res.stderr
    rows = _cells(res.stdout)
    assert rows["added"] == "2" and rows["similarities"] == "no similarities.json"
    assert not {"errors", "warnings", "renames", "batches"} & set(rows)
    assert json.loads(run("sync", "--format", "json").stdout)["batches"] == 0   # the JSON keeps its keys


def test_the_sync_table_counts_warnings_and_stays_narrow_when_piped(run, tmp_path):
    kbdir = _synced(run, tmp_path)
    assert run("sync").returncode == 0
    (kbdir / "gone.keywords.json").write_text(json.dumps(kw("mine", "x" * 20)), encoding="utf-8")
    (kbdir / "a.md").rename(kbdir / "c.md")
    res = run("sync")
    assert res.returncode == 0, res.stderr
    rows = _cells(res.stdout)
    assert rows["warnings"] == "2 (on stderr)" and rows["renames"] == "a.md -> c.md"
    assert "gone.keywords.json: keywords file left behind" in res.stderr and "left behind" not in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 80


def test_the_query_table_footer_leaves_out_per_source_counts_and_the_attempt_id(run, tmp_path):
    _synced(run, tmp_path)
    assert run("sync").returncode == 0
    res = run("query", "alpha tokenizers")
    assert res.returncode == 0, res.stderr
    footer = res.stdout.strip().splitlines()[-1]
    assert footer == "count: 1  total: 1  query_id: 1"
    out = run("query", "alpha tokenizers", "--format", "json").json()
    assert {"keyword_search_count", "grep_search_count", "attempt_id"} <= set(out)


def test_export_in_table_mode_prints_a_table_of_rows_not_json(run, tmp_path):
    _synced(run, tmp_path)
    assert run("sync").returncode == 0
    res = run("export", "--format", "table")
    assert res.returncode == 0, res.stderr
    assert not res.stdout.lstrip().startswith("{") and "export (not written)" in res.stdout
    assert "│ documents" in res.stdout and "nothing written" in res.stderr
    written = run("export", "--format", "table", "--output", tmp_path / "backup.json")
    assert written.returncode == 0 and written.stdout.splitlines()[-1] == f"output: {tmp_path / 'backup.json'}"
    assert json.loads((tmp_path / "backup.json").read_text(encoding="utf-8"))["format"] == "kbindex-export"
    assert json.loads(run("export").stdout)["format"] == "kbindex-export"    # the default: the JSON dump
