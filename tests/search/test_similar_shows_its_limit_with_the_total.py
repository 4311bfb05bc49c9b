"""``similar`` on a keyword with more relations than its limit (one similarities.json can relate a keyword to
thousands): the strongest ``limit`` (50 by default, 0: all), ``total`` counting them all, with a user context
too; the table says what it did not show; MCP ``kb_similar`` still pages through every relation once."""

from __future__ import annotations

import pytest

from kb_indexer.defaults import SIMILAR_DEFAULT_LIMIT
from tests.helpers import HUB_FEW, synced_hub

pytestmark = pytest.mark.both_engines

N = 240


def test_similar_shows_the_strongest_and_counts_every_relation(small):
    kb = synced_hub(small, N)
    out = kb.similar("hub")
    assert out["count"] == len(out["similar_keywords"]) == SIMILAR_DEFAULT_LIMIT and out["total"] == N
    everything = kb.similar("hub", limit=0)
    assert everything["count"] == everything["total"] == N
    assert out["similar_keywords"] == everything["similar_keywords"][:SIMILAR_DEFAULT_LIMIT]   # the strongest
    scores = [s["score"] for s in everything["similar_keywords"]]
    assert scores == sorted(scores, reverse=True)
    assert kb.similar("hub", limit=3)["similar_keywords"] == everything["similar_keywords"][:3]
    few = kb.similar("few")
    assert few["count"] == few["total"] == HUB_FEW


def test_a_user_context_keeps_the_best_fitting_within_the_limit(small):
    kb = synced_hub(small, N)
    fitting = kb.similar("hub", user_context="hub relation 3", limit=0)
    assert fitting["total"] == fitting["count"] > 4
    four = kb.similar("hub", user_context="hub relation 3", limit=4)
    assert four["count"] == 4 and four["total"] == fitting["total"]
    assert four["similar_keywords"] == fitting["similar_keywords"][:4]


def test_mcp_similar_pages_through_every_relation_once(small):
    pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")
    from kb_indexer.mcp.server import kb_similar_impl

    kb = synced_hub(small, N)
    seen, cursor, pages = [], None, 0
    while True:
        page = kb_similar_impl(kb.db_path, "hub", None, cursor)
        assert page["count"] == N
        seen += [s["keyword"] for s in page["similar_keywords"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages > 1
    assert seen == [s["keyword"] for s in kb.similar("hub", limit=0)["similar_keywords"]]


def test_the_table_says_how_many_related_keywords_it_did_not_show(small, run):
    kb = synced_hub(small, N)
    db = ["--db", str(kb.db_path)]
    table = run("similar", "hub", *db)
    assert table.returncode == 0, table.stderr
    assert f"showing {SIMILAR_DEFAULT_LIMIT} of {N} related keywords" in table.stderr
    data = run("similar", "hub", "-n", "0", "-f", "json", *db).json()
    assert data["count"] == data["total"] == N
    assert run("similar", "hub", "-n", "0", *db).stderr == ""
