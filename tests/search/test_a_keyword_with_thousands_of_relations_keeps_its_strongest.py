"""A keyword with more relations than the cap (one checkout's similarities.json can relate it to thousands of
keywords): a query keeps, scores, prints and records only its strongest ``MAX_EXPANSIONS`` expansions, says how
many more there were, and does no more work for them however many there are; what it keeps is what an uncapped
walk ranks first, with and without a context, at depth 1 and 2. A keyword with a few relations keeps them all
and its query's JSON has no cap fields."""

from __future__ import annotations

import json

import pytest

from kb_indexer.defaults import MAX_EXPANSIONS
from kb_indexer.search.expansion import expand
from kb_indexer.search.options import QueryOptions
from kb_indexer.text import normalize_keyword
from tests.helpers import HUB_FEW, synced_hub

pytestmark = pytest.mark.both_engines


def _seeds(kb, *names):
    rows = {r[1]: r[0] for r in kb.conn.execute("SELECT id, keyword FROM keywords")}
    return [(normalize_keyword(n), rows.get(normalize_keyword(n))) for n in names]


def _capped_parts(out):
    """The parts of a query's JSON that list expansions, by their lengths."""
    q = out["query"]
    return (len(q["expanded_keywords"]), {k: len(v) for k, v in q["expansion_map"].items()},
            len(q["explain"]["expansions"]))


@pytest.mark.parametrize("n", [MAX_EXPANSIONS + 40, 4 * MAX_EXPANSIONS])
def test_a_query_keeps_the_strongest_expansions_and_counts_the_rest(small, n):
    kb = synced_hub(small, n)
    out = kb.query("", ["hub", "few"], QueryOptions(explain=True, limit=0))
    q = out["query"]
    assert q["expansion_limit"] == MAX_EXPANSIONS
    assert q["expansions_omitted"] == n - MAX_EXPANSIONS     # exactly the rest
    assert _capped_parts(out) == (2 + MAX_EXPANSIONS + HUB_FEW, {"hub": MAX_EXPANSIONS, "few": HUB_FEW},
                                  MAX_EXPANSIONS + HUB_FEW)
    # the kept are the strongest: those an uncapped walk ranks first
    uncapped = expand(kb.conn, _seeds(kb, "hub", "few"), limit=10 ** 6)
    assert len(uncapped) == n + HUB_FEW
    assert q["expansion_map"]["hub"] == [e.keyword for e in uncapped if e.user_keyword == "hub"][:MAX_EXPANSIONS]
    assert q["expansion_map"]["few"] == [f"few term {i}" for i in range(HUB_FEW)]
    # the history keeps what was used, no more
    recorded = kb.conn.execute("SELECT expansions FROM query_attempts WHERE id = ?", (out["attempt_id"],)).fetchone()
    assert len(json.loads(recorded[0])) == MAX_EXPANSIONS + HUB_FEW


def test_a_keyword_with_few_relations_has_no_cap_fields(small):
    kb = synced_hub(small, MAX_EXPANSIONS + 40)
    q = kb.query("", ["few"], QueryOptions(explain=True))["query"]
    assert "expansions_omitted" not in q and "expansion_limit" not in q
    assert q["expansion_map"] == {"few": [f"few term {i}" for i in range(HUB_FEW)]}
    assert q["explain"]["expansion_limit"] == MAX_EXPANSIONS


@pytest.mark.parametrize("context", [None, "hub relation 3"])
def test_the_cut_keeps_what_an_uncapped_walk_ranks_first(small, context):
    kb = synced_hub(small, 120)
    seeds = _seeds(kb, "hub", "few")
    judged: list[list[int]] = []

    def scorer(user_context, candidates):   # the lexical rule, counting what it is asked
        from kb_indexer.search.context import lexical_scores
        judged.append([c["id"] for c in candidates])
        return lexical_scores(user_context, candidates)

    def walk(limit):
        judged.clear()
        got = expand(kb.conn, seeds, depth=2, context=context, context_scorer=scorer, limit=limit)
        return got, sum(len(j) for j in judged)

    full, judged_all = walk(10 ** 6)
    assert len([e for e in full if e.user_keyword == "hub" and e.hops == 2]) > 1   # the walk goes on past hub terms
    deep_kept = 0
    for limit in (1, 7, 30, 100):
        capped, judged_capped = walk(limit)
        deep_kept += sum(1 for e in capped if e.hops == 2)
        for seed in ("hub", "few"):
            want = [e for e in full if e.user_keyword == seed]
            got = [e for e in capped if e.user_keyword == seed]
            assert [(e.keyword, e.weight, e.path, e.context_match) for e in got] == \
                   [(e.keyword, e.weight, e.path, e.context_match) for e in want[:limit]]
            assert capped.omitted.get(seed, 0) <= len(want) - len(got)
        if context is not None:   # relations that could not make the cut are not judged
            assert judged_capped < judged_all
    assert deep_kept > 0   # a cut that keeps keywords of the second hop too
    assert full.omitted == {}


@pytest.mark.parametrize("n", [MAX_EXPANSIONS + 40, 4 * MAX_EXPANSIONS])
def test_a_context_is_judged_on_the_strongest_relations_only(small, n):
    """An LLM judges each relation it is asked about: a hub's relations past the cut are not sent to it."""
    from kb_indexer.search.context import lexical_scores

    kb = synced_hub(small, n)
    asked: list[int] = []

    def scorer(user_context, candidates):
        asked.extend(c["id"] for c in candidates)
        return lexical_scores(user_context, candidates)

    got = expand(kb.conn, _seeds(kb, "hub"), depth=2, context="hub relation 3", context_scorer=scorer)
    assert len(got) == MAX_EXPANSIONS and got.omitted["hub"] > 0
    assert len(asked) == len(set(asked)) < 2 * MAX_EXPANSIONS   # each once, and not all n + HUB_DEEP of them


def test_the_cli_says_how_many_expansions_it_left_out(small, run):
    kb = synced_hub(small, MAX_EXPANSIONS + 40)
    db = ["--db", str(kb.db_path)]
    query = run("query", "-k", "hub", "-f", "json", "--no-stale-check", *db).json()
    assert query["query"]["expansions_omitted"] == 40 and len(query["query"]["expansion_map"]["hub"]) == MAX_EXPANSIONS
