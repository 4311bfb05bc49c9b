"""`query` shows 10 results by default, `--limit 0` shows every document found, and `total` counts every
document found by any channel (tags, expansions, full text), whatever the limit."""

from __future__ import annotations

import pytest

from helpers import kw, write_doc
from kb_indexer.errors import UsageError
from kb_indexer.defaults import DEFAULT_LIMIT, MAX_LIMIT
from kb_indexer.search.fulltext import PER_ROW_MAX
from kb_indexer.api import QueryOptions

TEXT_ONLY = 30                # "vortex" in the text, no tag
TAGGED = PER_ROW_MAX + 4      # tagged "wing", not a word of it in the text: more than the per-row lookups serve


@pytest.fixture
def found(small):
    handle, kbdir = small
    for i in range(TEXT_ONLY):
        write_doc(kbdir, f"text/t{i:03d}.md", f"# T{i}\n\n" + "vortex shedding " * (1 + i % 5) + "\n", kw(f"s{i}"))
    for i in range(TAGGED):
        write_doc(kbdir, f"tag/g{i:03d}.md", f"# G{i}\n\nlift and drag\n", kw("wing", f"u{i}"))
    write_doc(kbdir, "other.md", "# Other\n\nnothing relevant\n", kw("unrelated"))
    handle.sync()
    return handle


def _paths(out):
    return [r["filepath"] for r in out["results"]]


@pytest.mark.parametrize("question, total", [("vortex", TEXT_ONLY), ("wing", TAGGED),
                                             ("vortex wing", TEXT_ONLY + TAGGED), ("zeppelin", 0)])
def test_total_counts_every_document_found_and_limit_zero_shows_them(found, question, total):
    page = found.query(question)
    everything = found.query(question, options=QueryOptions(limit=0))
    assert page["total"] == everything["total"] == everything["count"] == total
    assert page["count"] == min(DEFAULT_LIMIT, total)
    assert _paths(everything)[:DEFAULT_LIMIT] == _paths(page)  # the page is the top of the full ranking
    assert len(set(_paths(everything))) == total


def test_a_limit_cuts_the_same_ranking(found):
    everything = _paths(found.query("vortex wing", options=QueryOptions(limit=0)))
    for n in (1, 7, 25):
        out = found.query("vortex wing", options=QueryOptions(limit=n))
        assert _paths(out) == everything[:n] and out["total"] == len(everything)


def test_history_records_what_was_shown(found):
    out = found.query("vortex wing", options=QueryOptions(limit=0))
    entry = found.learning.history(out["query_id"])
    assert entry["attempts"][-1]["result_count"] == TEXT_ONLY + TAGGED


@pytest.mark.parametrize("limit", [-1, MAX_LIMIT + 1, True, 2.5])
def test_bad_limits_are_refused(found, limit):
    with pytest.raises(UsageError):
        found.query("vortex", options=QueryOptions(limit=limit))


def test_cli_limit_zero_total_and_the_note_on_stderr(found, run):
    res = run("query", "vortex wing", "--limit", "0", "--format", "json", "--db", found.db_path)
    assert res.returncode == 0, res.stderr
    assert res.json()["count"] == res.json()["total"] == TEXT_ONLY + TAGGED
    res = run("query", "vortex wing", "--db", found.db_path)
    assert res.returncode == 0 and f"showing {DEFAULT_LIMIT} of {TEXT_ONLY + TAGGED} documents" in res.stderr
    chosen = run("query", "vortex wing", "-n", "3", "--db", found.db_path)   # a limit chosen is not news
    assert chosen.returncode == 0 and "showing" not in chosen.stderr
    res = run("query", "vortex", "--limit", "-1", "--format", "json", "--db", found.db_path)
    assert res.returncode == 2
