"""`import` refuses a value of the wrong kind for its column before writing anything: text in a numeric column
(a weight of "heavy" was imported, and every later query over that document failed with an internal error) and
text that is not the JSON kbindex reads back in a JSON column (history and refine failed the same way). A file
name with control characters, which sync indexes, comes back from an export (the whole import was refused)."""

from __future__ import annotations

import copy

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import ValidationError
from kb_indexer.store.connection import transaction

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


# What is inside a JSON column, and numbers out of their range: each was imported and then made a later command
# fail with an internal error (a negative question size: every query sharing its terms; "terms": 5: learned list).
LEARNED_CASES = [
    ("size", -5, "must be 0 or more"),
    ("detail", '{"terms": 5}', "'terms' must be a list of strings"),
    ("detail", '{"filepath": ["a"]}', "'filepath' must be a string"),
    ("detail", '{"delta": "up"}', "'delta' must be a number"),
]


@pytest.fixture
def learned_export(kb):
    out = kb.query("how do agents learn from experience")
    helpful = out["results"][0]["filepath"]
    kb.learning.feedback(out["query_id"], [helpful], [], attempt_id=out["attempt_id"])
    kb.learning.learn()
    return kb.export()


@pytest.mark.parametrize("column, value, said", LEARNED_CASES, ids=[f"{c}={v}" for c, v, _ in LEARNED_CASES])
def test_a_learned_item_readers_cannot_use_refuses_the_import(kb, learned_export, column, value, said):
    data = copy.deepcopy(learned_export)
    row = next(r for r in data["tables"]["learned_items"] if r["kind"] == "association")
    row[column] = value
    with pytest.raises(ValidationError, match=said):
        kb.import_(data, force=True)
    assert kb.learning.learned_list()["count"] >= 1   # the index as it was


def test_recorded_options_that_are_not_valid_any_more_take_their_defaults(kb, learned_export):
    """Options recorded by another version (or edited) are not refused on import, where older exports may carry
    them; refine uses the defaults instead of failing."""
    data = copy.deepcopy(learned_export)
    for row in data["tables"]["query_attempts"]:
        row["options"] = '{"types": 5, "weights": "x", "limit": "ten"}'
    kb.import_(data, force=True)
    qid = data["tables"]["queries"][0]["id"]
    assert kb.learning.refine(qid, ["policy gradient"])["results"] is not None


def test_a_stored_question_size_below_its_shared_terms_cannot_break_a_query(kb, learned_export):
    """A reader's guard beside the import's check: an association whose stored size is negative, or smaller than the terms it
    shares with a question (an index written by hand) still scores."""
    with transaction(kb.conn):
        kb.conn.execute("UPDATE learned_items SET size = -5 WHERE kind = 'association'")
    assert kb.query("agents learn from experience by trial")["results"]
