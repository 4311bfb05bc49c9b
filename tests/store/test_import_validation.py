"""`import` validates every path and value of an export before writing anything: a path leading outside
the knowledge-base root, a value SQLite cannot hold or JSON nested too deep refuses the whole import."""

from __future__ import annotations

import copy
import json
import os

import pytest

from helpers import fulltext_bodies
from kb_indexer.errors import ValidationError


@pytest.fixture
def export(kb):
    data = kb.export()
    assert data["tables"]["documents"], "the bundled KB has documents"
    return data


def _counts(handle) -> tuple[int, int, int]:
    one = lambda sql: handle.conn.execute(sql).fetchone()[0]  # noqa: E731
    return one("SELECT COUNT(*) FROM documents"), one("SELECT COUNT(*) FROM keywords"), \
        len(fulltext_bodies(handle.conn))


BAD_PATHS = [
    "../../../../../etc/passwd",
    "/etc/passwd",
    "notes/../../secret.md",
    *(["notes\\..\\..\\secret.md"] if os.sep == "\\" else []),   # on POSIX one file name (see below)
    "notes/a\x00.md",
    "C:/Windows/win.ini",
    "./notes.md",
    "notes//a.md",
    "a/" * 3000 + "x.md",
    "x" * 300 + ".md",
    "bad\udc80name.md",
]


@pytest.mark.parametrize("bad", BAD_PATHS, ids=range(len(BAD_PATHS)))
def test_document_path_outside_the_kb_refuses_the_whole_import(kb, export, bad):
    data = copy.deepcopy(export)
    data["tables"]["documents"][-1]["filepath"] = bad
    before = _counts(kb)
    with pytest.raises(ValidationError) as info:
        kb.import_(data, force=True)
    assert info.value.code == "invalid_input"
    assert "filepath" in info.value.message
    assert _counts(kb) == before  # nothing written, nothing deleted


@pytest.mark.skipif(os.sep == "\\", reason="a backslash is a separator on Windows")
def test_a_backslash_path_is_one_file_name_inside_the_root_on_posix(kb, export):
    """sync indexes such a name (a file `notes\\..\\..\\secret.md` in the root): its export imports again,
    and nothing leads outside the root."""
    data = copy.deepcopy(export)
    data["tables"]["documents"][-1]["filepath"] = "notes\\..\\..\\secret.md"
    kb.import_(data, force=True)
    assert kb.conn.execute("SELECT COUNT(*) FROM documents WHERE filepath = ?",
                           ("notes\\..\\..\\secret.md",)).fetchone()[0] == 1
    assert not (kb.kb_root / "notes\\..\\..\\secret.md").exists()


def test_feedback_path_is_checked_too(kb, export):
    data = copy.deepcopy(export)
    data["tables"]["query_feedback"] = [{"id": 1, "query_id": 1, "filepath": "../../etc/shadow", "helpful": 1}]
    with pytest.raises(ValidationError, match="'query_feedback' row 0: 'filepath'"):
        kb.import_(data, force=True)


@pytest.mark.parametrize("value, problem", [
    (2**70, "64-bit"),
    ({"nested": True}, "string, number or null"),
    ("bad\udc80title", "lone surrogate"),
], ids=["big-int", "object", "surrogate"])
def test_values_sqlite_cannot_hold_are_invalid_input(kb, export, value, problem):
    data = copy.deepcopy(export)
    data["tables"]["documents"][0]["title"] = value
    with pytest.raises(ValidationError, match=problem):
        kb.import_(data, force=True)


def test_overlong_keyword_is_refused(kb, export):
    data = copy.deepcopy(export)
    data["tables"]["keywords"][0]["keyword"] = "k" * 100_000
    with pytest.raises(ValidationError, match="characters long"):
        kb.import_(data, force=True)


def test_clean_export_still_round_trips(kb, export):
    before = _counts(kb)
    kb.import_(copy.deepcopy(export), force=True)
    assert _counts(kb) == before
    assert kb.export()["tables"] == export["tables"]


def test_cli_import_outside_path_is_invalid_input_and_writes_nothing(run, kb, export, tmp_path):
    data = copy.deepcopy(export)
    data["tables"]["documents"][0]["filepath"] = "../../../../../etc/passwd"
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    before = _counts(kb)
    res = run("import", path, "--force", "--db", kb.db_path, "--format", "json")
    assert res.returncode == 1
    assert res.error()["code"] == "invalid_input"
    assert "../../../../../etc/passwd" in res.error()["message"]
    assert _counts(kb) == before


def test_cli_import_deeply_nested_json_is_invalid_input(cli, empty_kb, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    res = cli("import", path, "--db", empty_kb.db_path, "--format", "json")
    assert res.exit_code == 1, res.stderr
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "invalid_input"
    assert "nested" in err["message"]


def test_cli_import_non_utf8_stdin_is_invalid_input(run, empty_kb):
    import subprocess

    from tests.conftest import kbindex_exe

    proc = subprocess.run(kbindex_exe() + ["import", "-", "--db", str(empty_kb.db_path), "--format", "json"],
                          input=b"\xff\xfe{}", capture_output=True, timeout=60)
    assert proc.returncode == 1
    assert json.loads(proc.stderr)["error"]["code"] == "invalid_input"
