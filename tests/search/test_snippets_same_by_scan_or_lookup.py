"""Snippets of given documents are the same whether FTS5 looks each document up or makes one pass over the
matches (SQLite's engine, kb_indexer.store.engines.sqlite, picks the pass while the documents are at most
SCAN_PER_ID per id: a speed choice that must not change a snippet)."""

import pytest

from kb_indexer.search.fulltext import build_query
from kb_indexer.store import fulltext as store
from kb_indexer.store.engines import sqlite as sqlite_engine

pytestmark = pytest.mark.sqlite_only("the choice between FTS5 statements")


def _snippets(kb, monkeypatch, per_id: int, query, ids):
    monkeypatch.setattr(sqlite_engine, "SCAN_PER_ID", per_id)
    return store.snippets(kb.conn, query, ids, 24, 64 * 1024)


def test_snippets_same_by_scan_or_lookup(kb, monkeypatch):
    query = build_query(["learning", "agent", "reward", "policy"])
    matching = list(store.all_scores(kb.conn, query, (2.0, 0.25, 2.0, 1.0)))
    unmatched = max(r[0] for r in kb.conn.execute("SELECT id FROM documents")) + 1000
    ids = matching[: max(2, len(matching) // 2)] + [unmatched]
    assert len(matching) >= 4

    by_lookup = _snippets(kb, monkeypatch, 0, query, ids)           # a look-up per id
    by_scan = _snippets(kb, monkeypatch, 10**9, query, ids)         # one pass over the matches

    assert by_scan == by_lookup
    assert set(by_scan) == set(ids) - {unmatched}
    assert all("**" in s for s in by_scan.values() if s is not None)


@pytest.mark.parametrize("limit", [1, 3, 100])
def test_ranked_rows_same_by_one_statement_or_two(kb, monkeypatch, limit):
    """``ranked`` sorts by bm25() and makes snippets in a second pass when that pass is a scan, else FTS5
    sorts and makes them in one statement: the rows (ids, scores, snippets, order) are the same."""
    query = build_query(["learning", "agent", "reward", "policy", "game"])
    weights = (2.0, 0.25, 2.0, 1.0)

    def rows(per_id: int) -> list[tuple[int, float, str | None]]:
        monkeypatch.setattr(sqlite_engine, "SCAN_PER_ID", per_id)
        return store.ranked(kb.conn, query, limit, weights, 24, 64 * 1024)

    one_statement, two_passes = rows(0), rows(10**9)
    assert len(two_passes) == min(limit, len(store.all_scores(kb.conn, query, weights))) > 0
    assert [(d, round(s, 9), snip) for d, s, snip in two_passes] == \
        [(d, round(s, 9), snip) for d, s, snip in one_statement]
    assert all(snip and "**" in snip for _, _, snip in two_passes)
