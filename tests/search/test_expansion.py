"""Expansion semantics: direction, contrast, depth, cycles, threshold, weights, types, context."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.search.context import context_factor, lexical_scores
from kb_indexer.search.expansion import (DEFAULT_TYPE_WEIGHTS, HOP_DECAY, expand, expansion_map,
                                         parse_weight_options, resolve_types, resolve_weights)
from kb_indexer.text import normalize_keyword


def seeds(kb, *names):
    out = []
    for n in names:
        row = kb.conn.execute("SELECT id FROM keywords WHERE keyword = ?", (normalize_keyword(n),)).fetchone()
        out.append((normalize_keyword(n), row[0] if row else None))
    return out


def run(kb, *names, **kw):
    return expand(kb.conn, seeds(kb, *names), **kw)


def weights_of(expansions):
    return {e.keyword: round(e.weight, 6) for e in expansions}


@pytest.fixture
def graph(empty_kb):
    """a ↔ b synonym 1.0; a → c narrower 0.8 (directional); b ↔ d related_concept 0.9;
    a ↔ e contrast 0.9; d → f application 0.6 (directional); x ↔ a broader 1.0."""
    k = empty_kb
    k.relate("a", "b", "synonym", "always", 1.0)
    k.relate("a", "c", "narrower", "c is a kind of a", 0.8, directional=True)
    k.relate("b", "d", "related_concept", "b and d in the same field", 0.9)
    k.relate("a", "e", "contrast", "opposites", 0.9)
    k.relate("d", "f", "application", "f uses d", 0.6, directional=True)
    k.relate("x", "a", "broader", "x is the general field", 1.0)
    return k


def test_depth_one_expands_direct_neighbours_with_type_weights(graph):
    got = weights_of(run(graph, "a", depth=1, threshold=0.0))
    assert got == {"b": 1.0, "c": 0.64, "x": 0.5}   # broader: general context at 0.5


def test_directional_relation_expands_only_from_its_source(graph):
    assert "c" in weights_of(run(graph, "a", threshold=0.0))
    assert "a" not in weights_of(run(graph, "c", threshold=0.0))
    # d → f: f never expands back to d
    assert "f" in weights_of(run(graph, "d", threshold=0.0))
    assert weights_of(run(graph, "f", threshold=0.0)) == {}


def test_contrast_expands_only_when_asked(graph):
    for depth in range(0, 6):
        assert "e" not in weights_of(run(graph, "a", depth=depth, threshold=0.0))
    assert "a" not in weights_of(run(graph, "e", depth=3, threshold=0.0))
    assert DEFAULT_TYPE_WEIGHTS["contrast"] == 0.0
    comparing = resolve_weights(contrast=True)
    assert comparing["contrast"] == 1.0
    assert weights_of(run(graph, "a", threshold=0.0, weights=comparing))["e"] == pytest.approx(0.9)
    assert resolve_types(["contrast"]) == {"contrast"}
    assert resolve_weights({"contrast": 0.5})["contrast"] == 0.5
    assert resolve_weights({"contrast": 0}, contrast=True)["contrast"] == 0.0
    with pytest.raises(UsageError):
        resolve_weights({"contrast": 1.5})


def test_depth_zero_and_depth_two(graph):
    assert run(graph, "a", depth=0, threshold=0.0) == []
    got = weights_of(run(graph, "a", depth=2, threshold=0.0))
    # a -b-> (1.0) -d-> 0.5 * 0.9 * decay
    assert got["d"] == round(1.0 * 0.5 * 0.9 * HOP_DECAY, 6)
    assert "f" not in got  # three hops away
    got3 = weights_of(run(graph, "a", depth=3, threshold=0.0))
    assert got3["f"] == round(1.0 * 0.45 * 0.5 * 0.6 * HOP_DECAY ** 2, 6)
    hops = {e.keyword: e.hops for e in run(graph, "a", depth=3, threshold=0.0)}
    assert hops == {"b": 1, "c": 1, "x": 1, "d": 2, "f": 3}


def test_threshold_cuts_and_stops_further_expansion(graph):
    got = weights_of(run(graph, "a", depth=3, threshold=0.35))
    assert got == {"b": 1.0, "c": 0.64, "d": 0.36, "x": 0.5}
    # a weight exactly at the threshold is kept
    assert "c" in weights_of(run(graph, "a", threshold=0.64))
    assert "c" not in weights_of(run(graph, "a", threshold=0.65))
    # d is dropped at 0.4, so f (reached only through d) is not explored either
    assert weights_of(run(graph, "a", depth=5, threshold=0.4)) == {"b": 1.0, "c": 0.64, "x": 0.5}


def test_cycles_are_bounded_and_output_deterministic(empty_kb):
    k = empty_kb
    k.relate("p", "q", "synonym", "ctx", 1.0)
    k.relate("q", "r", "synonym", "ctx", 1.0)
    k.relate("r", "p", "synonym", "ctx", 1.0)
    k.relate("r", "s", "related_concept", "ctx", 1.0)
    first = run(k, "p", depth=5, threshold=0.0)
    assert [e.keyword for e in first] == ["q", "r", "s"]
    assert all(e.keyword != "p" for e in first)
    again = run(k, "p", depth=5, threshold=0.0)
    assert [e.to_dict() for e in first] == [e.to_dict() for e in again]


def test_best_path_wins(empty_kb):
    k = empty_kb
    k.relate("m", "n", "related_concept", "ctx", 0.6)   # direct: 0.3
    k.relate("m", "o", "synonym", "ctx", 1.0)
    k.relate("o", "n", "synonym", "ctx", 1.0)           # via o: 1.0 * 1.0 * decay = 0.8
    best = {e.keyword: e for e in run(k, "m", depth=2, threshold=0.0)}
    assert round(best["n"].weight, 6) == HOP_DECAY
    assert best["n"].hops == 2 and best["n"].via == "o" and len(best["n"].path) == 2


def test_weight_overrides_and_type_filter(graph):
    got = weights_of(run(graph, "a", depth=2, threshold=0.0, weights=resolve_weights({"related_concept": 1.0})))
    assert got["d"] == round(0.9 * HOP_DECAY, 6)
    only_syn = weights_of(run(graph, "a", depth=2, threshold=0.0, types=resolve_types(["synonym"])))
    assert only_syn == {"b": 1.0}
    assert resolve_types(["synonym,narrower", "broader"]) == {"synonym", "narrower", "broader"}
    with pytest.raises(UsageError):
        resolve_types(["nonsense"])
    with pytest.raises(UsageError):
        resolve_weights({"narrower": 1.5})
    assert parse_weight_options(["narrower=0.9,broader=0"]) == {"narrower": 0.9, "broader": 0.0}
    with pytest.raises(UsageError):
        parse_weight_options(["narrower"])
    # a zero weight disables a type
    assert "x" not in weights_of(run(graph, "a", threshold=0.0, weights=resolve_weights({"broader": 0})))


def test_unknown_seed_and_expansion_map(graph):
    s = seeds(graph, "a", "nope")
    exps = expand(graph.conn, s, threshold=0.5)
    assert expansion_map(s, exps) == {"a": ["b", "c", "x"], "nope": []}


def test_each_seed_expands_separately(graph):
    exps = run(graph, "a", "d", threshold=0.0)
    by_seed = {}
    for e in exps:
        by_seed.setdefault(e.user_keyword, set()).add(e.keyword)
    assert by_seed["a"] == {"b", "c", "x"}
    assert by_seed["d"] == {"b", "f"}


def test_context_down_weights_relations_that_do_not_fit(empty_kb):
    k = empty_kb
    k.relate("rl", "alphago", "synonym", "game playing agents on board games", 1.0)
    k.relate("rl", "robot arm", "synonym", "industrial robotics control", 1.0)
    plain = weights_of(run(k, "rl", threshold=0.0))
    assert plain == {"alphago": 1.0, "robot arm": 1.0}
    ctx = {e.keyword: e for e in run(k, "rl", threshold=0.0, context="board games")}
    assert ctx["alphago"].weight == pytest.approx(1.0) and ctx["alphago"].context_match == 1.0
    assert ctx["robot arm"].weight == pytest.approx(context_factor(0.0)) and ctx["robot arm"].context_match == 0.0
    # the threshold then decides
    assert set(weights_of(run(k, "rl", threshold=0.8, context="board games"))) == {"alphago"}


def test_context_scorer_is_pluggable_and_batched(empty_kb):
    k = empty_kb
    k.relate("rl", "alphago", "synonym", "games", 1.0)
    k.relate("rl", "robot arm", "synonym", "robots", 1.0)
    k.relate("alphago", "go", "synonym", "games", 1.0)
    calls = []

    def scorer(user_context, candidates):
        calls.append((user_context, [c["keyword"] for c in candidates]))
        assert {"id", "keyword", "source", "similarity_type", "context", "score"} <= set(candidates[0])
        return {c["id"]: (1.0 if c["keyword"] != "robot arm" else 0.0) for c in candidates}

    got = weights_of(run(k, "rl", depth=2, threshold=0.0, context="anything", context_scorer=scorer))
    assert got["robot arm"] == pytest.approx(context_factor(0.0))
    assert got["alphago"] == 1.0 and got["go"] == pytest.approx(HOP_DECAY)
    assert len(calls) == 2                       # one batch per hop
    assert sorted(calls[0][1]) == ["alphago", "robot arm"]
    # a sequence in candidate order works too
    seq = run(k, "rl", threshold=0.0, context="x", context_scorer=lambda ctx, cands: [0.0] * len(cands))
    assert all(e.context_match == 0.0 for e in seq)
    with pytest.raises(ValueError):
        run(k, "rl", threshold=0.0, context="x", context_scorer=lambda ctx, cands: [1.0])


def test_context_scorer_not_asked_about_hopeless_relations(empty_kb):
    k = empty_kb
    k.relate("rl", "weak", "broader", "ctx", 0.5)       # 0.15 at best: below 0.35 whatever the context
    seen = []
    run(k, "rl", context="anything", context_scorer=lambda ctx, c: seen.extend(c) or [1.0] * len(c))
    assert seen == []


def test_lexical_scores():
    cands = [{"id": 1, "keyword": "alphago", "source": "rl", "context": "When discussing game-playing agents"},
             {"id": 2, "keyword": "robot", "source": "rl", "context": "industrial robotics"}]
    assert lexical_scores("board games", cands) == [0.5, 0.0]
    assert lexical_scores("the of and", cands) == [1.0, 1.0]   # no content words: no information
