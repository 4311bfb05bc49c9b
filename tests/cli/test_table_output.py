"""Human (table) output: user text is printed verbatim, never as Rich markup; progress goes to stderr."""

from __future__ import annotations

import json

from tests.helpers import kw, write_doc


# -- 2. user text is never Rich markup in tables ------------------------------------------------------

MARKUP_TITLE = "Arrays [/] and [bold]x[/bold] :smile:"


def test_markup_like_user_text_is_printed_verbatim_in_tables(small, cli):
    handle, kbdir = small
    write_doc(kbdir, "arrays.md", f"# {MARKUP_TITLE}\n\nAbout arrays [red]and[/red] slices.\n",
              kw("Arrays [/] summary", "arrays", "[bold]tag"))
    assert handle.sync()["errors"] == []
    db = ("--db", str(handle.db_path))
    outputs = {}
    for args in (("list-docs",), ("show", str(kbdir / "arrays.md")), ("query", "arrays"), ("search", "arrays"),
                 ("keywords", str(kbdir / "arrays.md")), ("similar", "arrays")):
        res = cli(*args, *db)
        assert res.exit_code == 0, (args, res.stderr)
        assert "MarkupError" not in res.stderr and "internal" not in res.stderr, (args, res.stderr)
        outputs[args[0]] = res.stdout
    assert MARKUP_TITLE in outputs["show"] and "Arrays [/] summary" in outputs["show"]
    assert "[bold]tag" in outputs["keywords"]
    assert MARKUP_TITLE in outputs["query"] and MARKUP_TITLE in outputs["list-docs"]


def test_doctor_table_prints_markup_like_values_verbatim(capsys):
    from kb_indexer.cli.llm import _render_doctor

    report = {
        "llm": {"backend": "openai", "sources": {}, "model": "m[/]", "url": "http://x/[bold]", "api_key_set": False,
                "reachable": False, "model_available": None, "latency_ms": None, "structured_output": None,
                "error": "HTTP 400: [/] bad [link=x]", "env_file": None},
        "database": {"path": "/tmp/[/]db", "exists": True, "schema": None, "llm_cache_entries": 0},
        "ok": False,
    }
    _render_doctor(report)
    out = capsys.readouterr().out
    assert "HTTP 400: [/] bad [link=x]" in out and "http://x/[bold]" in out


def test_sync_progress_bar_draws_on_stderr(small, monkeypatch, capsys):
    import sys

    import rich.progress

    from kb_indexer.cli import documents
    from kb_indexer.cli.output import Format

    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\nalpha\n")
    consoles = []

    class FakeProgress:
        def __init__(self, *a, console=None, **k):
            consoles.append(console)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def add_task(self, *a, **k):
            return 1

        def update(self, *a, **k):
            pass

    class TtyStderr:
        def isatty(self):
            return True

        def write(self, text):
            return len(text)

        def flush(self):
            pass

    tty = TtyStderr()
    monkeypatch.setattr(rich.progress, "Progress", FakeProgress)
    monkeypatch.setattr(sys, "stderr", tty)
    documents.sync(None, db=handle.db_path, kb=None, format=Format.json)
    assert json.loads(capsys.readouterr().out)["added"] == 1      # stdout: only the result
    assert len(consoles) == 1 and consoles[0] is not None
    assert consoles[0].stderr is True and consoles[0].file is tty


def test_numbers_in_tables_have_three_digits_and_large_ones_are_whole():
    from kb_indexer.cli.output import _str

    assert [_str(x) for x in (14500.3, 999.9, 123.456, 0.123456, 0.5, -2500.0)] == [
        "14500", "1000", "123", "0.123", "0.5", "-2500"]   # a doctor's round trip said 1.45e+04 ms


def test_a_nested_value_that_is_not_there_is_left_out_of_a_cell():
    from kb_indexer.cli.output import _str

    assert _str({"engine": "numpy", "pgvector": None, "index": None, "note": None}) == "engine=numpy"
    assert _str({"a": 0, "b": False, "c": ""}) == "a=0, b=False, c="   # values that are there stay


def test_db_stats_table_shows_no_empty_parts(small, cli):
    handle, _ = small
    res = cli("db-stats", "--db", str(handle.db_path))
    assert res.exit_code == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if "vector_search" in ln)
    assert "engine=numpy" in line and "pgvector=" not in line and "note=" not in line
