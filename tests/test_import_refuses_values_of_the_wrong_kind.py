"""`import` refuses a value of the wrong kind for its column before writing anything: text in a numeric column
(a weight of "heavy" was imported, and every later query over that document failed with an internal error) and
text that is not the JSON kbindex reads back in a JSON column (history and refine failed the same way). A file
name with control characters, which sync indexes, comes back from an export (the whole import was refused)."""

from __future__ import annotations

import copy

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import ValidationError

pytestmark = pytest.mark.both_engines

CASES = [
    ("document_keywords", "weight", "heavy", "must be a number"),
    ("query_attempts", "threshold", "0.7", "must be a number"),
    ("query_attempts", "keywords", "not json", "JSON text of a list"),
    ("query_attempts", "keywords", "[1, 2]", "only str values"),
    ("query_attempts", "options", "[]", "JSON text of an object"),
    ("query_attempts", "top_results", '{"a": 1}', "JSON text of a list"),
    ("query_attempts", "expansions", "[1]", "only dict values"),
]


@pytest.fixture
def export(kb):
    out = kb.query("reinforcement learning agents", ["reinforcement learning"])
    kb.learning.refine(out["query_id"], ["policy gradient"])
    return kb.export()


@pytest.mark.parametrize("table, column, value, said", CASES, ids=[f"{t}.{c}={v}" for t, c, v, _ in CASES])
def test_a_value_of_the_wrong_kind_refuses_the_whole_import(kb, export, table, column, value, said):
    data = copy.deepcopy(export)
    data["tables"][table][0][column] = value
    before = kb.conn.execute("SELECT COUNT(*) FROM query_attempts").fetchone()[0]
    with pytest.raises(ValidationError, match=said) as info:
        kb.import_(data, force=True)
    assert info.value.code == "invalid_input" and f"{table!r} row 0: {column!r}" in info.value.message
    assert kb.conn.execute("SELECT COUNT(*) FROM query_attempts").fetchone()[0] == before


def test_the_export_of_a_real_index_imports_and_answers(kb, export):
    kb.import_(copy.deepcopy(export), force=True)
    assert kb.query("reinforcement learning")["results"]
    assert kb.learning.history()["queries"]


def test_file_names_with_control_characters_round_trip(small):
    handle, kbdir = small
    names = ["new\nline.md", "\x1b]0;PWN\x07\x1b[31mx.md", "tab\there.md"]
    for name in names:
        (kbdir / name).write_text("# T\n\nzebracorn text\n", encoding="utf-8")
    assert handle.sync()["added"] == 3
    data = handle.export()
    handle.import_(data, force=True)
    assert sorted(d["filepath"] for d in handle.list_docs()["documents"]) == sorted(names)
    assert handle.sync()["added"] == 0
