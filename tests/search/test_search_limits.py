"""`search` answers with a bounded page by default; `total` counts every match; `--limit 0` gives all."""

from __future__ import annotations

import pytest

from helpers import kw, write_doc
from kb_indexer.errors import UsageError, ValidationError
from kb_indexer.defaults import SEARCH_DEFAULT_LIMIT


@pytest.fixture
def tagged(small):
    handle, kbdir = small
    for i in range(SEARCH_DEFAULT_LIMIT + 10):
        extra = ("rare",) if i % 7 == 0 else ()
        write_doc(kbdir, f"d{i:03d}.md", f"# D{i}\n\ntext\n", kw("s", "common", *extra))
    handle.sync()
    return handle


def test_default_limit_and_total(tagged):
    out = tagged.search(["common"])
    assert out["count"] == SEARCH_DEFAULT_LIMIT and out["total"] == SEARCH_DEFAULT_LIMIT + 10
    assert [r["filepath"] for r in out["results"]] == [f"d{i:03d}.md" for i in range(SEARCH_DEFAULT_LIMIT)]


def test_limit_zero_is_all_and_ranking_is_by_matched_keywords_then_path(tagged):
    out = tagged.search(["common", "rare"], limit=0)
    assert out["count"] == out["total"] == SEARCH_DEFAULT_LIMIT + 10
    rare = [f"d{i:03d}.md" for i in range(0, SEARCH_DEFAULT_LIMIT + 10, 7)]
    assert [r["filepath"] for r in out["results"][:len(rare)]] == rare
    assert out["results"][0]["matched_keywords"] == ["common", "rare"]
    assert out["results"][-1]["matched_keywords"] == ["common"]


def test_and_mode_counts_only_documents_with_every_keyword(tagged):
    out = tagged.search(["common", "rare"], mode="and", limit=3)
    assert out["count"] == 3 and out["total"] == len(range(0, SEARCH_DEFAULT_LIMIT + 10, 7))
    assert tagged.search(["common", "unknown"], mode="and")["total"] == 0


def test_bad_limits_and_keywords_are_refused(tagged):
    with pytest.raises(UsageError):
        tagged.search(["common"], limit=-1)
    with pytest.raises(ValidationError):
        tagged.search(["x" * 100_000])


def test_cli_limit_zero_and_total(tagged, run):
    res = run("search", "common", "--limit", "0", "--format", "json", "--db", tagged.db_path)
    assert res.returncode == 0, res.stderr
    assert res.json()["count"] == res.json()["total"] == SEARCH_DEFAULT_LIMIT + 10
    res = run("search", "common", "--db", tagged.db_path)
    assert res.returncode == 0 and f"of {SEARCH_DEFAULT_LIMIT + 10} documents" in res.stderr
