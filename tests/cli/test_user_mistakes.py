"""User mistakes are invalid_input (exit 1), never `internal`: arguments that are not UTF-8, ids beyond
SQLite's integers, over-long keywords."""

from __future__ import annotations

import json

import pytest

from kb_indexer.errors import ValidationError
from kb_indexer.limits import MAX_KEYWORD_CHARS

NOT_UTF8 = "caf\udce9"  # the argv form of the bytes b"caf\xe9" (Latin-1, not UTF-8)
HUGE_ID = str(2**64)
LONG = "k" * 100_000


@pytest.fixture
def db(empty_kb):
    empty_kb.relate("alpha", "beta", "synonym", "ctx")
    return empty_kb.db_path


def _invalid(res, *fragments):
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert res.stdout == ""
    err = res.error()
    assert err["code"] == "invalid_input", err
    for f in fragments:
        assert f in err["message"], err["message"]
    return err


@pytest.mark.parametrize("args", [
    ["query", NOT_UTF8],
    ["query", "ok", "--context", NOT_UTF8],
    ["query", "ok", "-k", NOT_UTF8],
    ["similar", NOT_UTF8],
    ["relate", NOT_UTF8, "beta", "-t", "synonym", "-c", "ctx"],
    ["relate", "alpha", "gamma", "-t", "synonym", "-c", NOT_UTF8],
    ["search", NOT_UTF8],
    ["docs", NOT_UTF8],
], ids=["query", "query-context", "query-keyword", "similar", "relate", "relate-context", "search", "docs"])
def test_arguments_that_are_not_utf8_are_invalid_input(run, db, args):
    _invalid(run(*args, "--db", db, "--format", "json"), "not valid UTF-8")


@pytest.mark.parametrize("args", [
    ["history", HUGE_ID],
    ["refine", HUGE_ID, "-k", "alpha"],
    ["feedback", HUGE_ID, "--helpful", "x.md"],
    ["learned", "remove", HUGE_ID],
], ids=["history", "refine", "feedback", "learned-remove"])
def test_ids_beyond_sqlite_integers_are_invalid_input(run, db, args):
    _invalid(run(*args, "--db", db, "--format", "json"), "9223372036854775807")


@pytest.mark.parametrize("args", [
    ["relate", LONG, "beta", "-t", "synonym", "-c", "ctx"],
    ["query", "question", "-k", LONG],
    ["search", LONG],
    ["similar", LONG],
], ids=["relate", "query", "search", "similar"])
def test_overlong_keywords_are_invalid_input_and_nothing_is_written(cli, db, empty_kb, args):
    before = empty_kb.db_stats()
    res = cli(*args, "--db", db, "--format", "json")
    assert res.exit_code == 1, res.stderr
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "invalid_input" and f"at most {MAX_KEYWORD_CHARS}" in err["message"]
    after = empty_kb.db_stats()
    assert (after["keywords"], after["similarities"], after["queries"]) == \
        (before["keywords"], before["similarities"], before["queries"])


def test_api_entry_points_check_text(empty_kb):
    with pytest.raises(ValidationError, match="not valid UTF-8"):
        empty_kb.query(NOT_UTF8)
    with pytest.raises(ValidationError, match="at most"):
        empty_kb.relate(LONG, "b", "synonym", "ctx")
    with pytest.raises(ValidationError, match="query_id"):
        empty_kb.learning.history(2**63)
