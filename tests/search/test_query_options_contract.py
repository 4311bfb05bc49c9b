"""QueryOptions is the one contract of a query: defaults from kb_indexer.defaults, validation with the
usual messages (bad usage, exit 2), frozen, a JSON round trip that the history records and `refine` reads
back, and every front end (CLI, MCP tool, chat tool, Python API) turning the same request into the same
options and the same results."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.chat.tools import run_tool
from kb_indexer.errors import UsageError
from kb_indexer import defaults

QUESTION = "reinforcement learning reward"


def _recorded(kb: KnowledgeBase, query_id: int) -> dict:
    """The options of the query's latest attempt, as the history stores them."""
    row = kb.conn.execute("SELECT options FROM query_attempts WHERE query_id = ? ORDER BY id DESC LIMIT 1",
                          (query_id,)).fetchone()
    return json.loads(row[0])


def _ranked(out: dict) -> list[tuple[str, float]]:
    return [(r["filepath"], r["relevance_score"]) for r in out["results"]]


def test_defaults_are_those_of_the_defaults_module():
    opts = QueryOptions()
    assert (opts.limit, opts.expand_depth, opts.min_weight, opts.context_threshold) == (
        defaults.DEFAULT_LIMIT, defaults.DEFAULT_DEPTH, defaults.DEFAULT_MIN_WEIGHT, defaults.DEFAULT_CONTEXT_THRESHOLD)
    assert (opts.method, opts.context, opts.types, opts.weights, opts.column_weights) == (
        "auto", None, None, None, None)
    assert opts.record and opts.use_learned and not opts.explain


@pytest.mark.parametrize("bad, message", [
    ({"limit": -1}, f"limit must be between 1 and {defaults.MAX_LIMIT}, or 0 for all, got -1"),
    ({"limit": True}, "limit must be between"),
    ({"expand_depth": defaults.MAX_DEPTH + 1}, f"expand depth must be between 0 and {defaults.MAX_DEPTH}"),
    ({"min_weight": 1.5}, "min_weight must be between 0 and 1, got 1.5"),
    ({"threshold": -0.1}, "min_weight must be between 0 and 1, got -0.1"),
    ({"context_threshold": 2}, "context_threshold must be between 0 and 1, got 2"),
    ({"min_weight": 0.5, "threshold": 0.2}, "are the same setting (threshold is its older name); give one"),
    ({"method": "vector"}, "Unknown method 'vector'; expected one of: auto, keyword, fulltext, semantic, hybrid"),
    ({"types": ("bogus",)}, "Unknown similarity type 'bogus'"),
    ({"types": 5}, "types must be similarity type names, got 5"),   # was a TypeError: internal
    ({"types": [1]}, "types must be similarity type names"),
    ({"weights": {"contrast": 1.5}}, "Weight for contrast must be a number between 0 and 1"),
    ({"weights": {"cousin": 0.5}}, "Unknown similarity type 'cousin' in weights"),
    ({"column_weights": (1.0, 2.0)}, "column_weights must be 4 numbers"),
])
def test_a_bad_option_is_refused_when_built_with_its_message(bad, message):
    with pytest.raises(UsageError) as exc:
        QueryOptions(**bad)
    assert message in exc.value.message and exc.value.exit_code == 2


def test_types_may_be_any_iterable_of_names():
    assert QueryOptions(types={"synonym": 1}.keys()).types == QueryOptions(types=["synonym"]).types == ("synonym",)


def test_options_are_frozen_and_normalised_once():
    opts = QueryOptions(types=("related_concept,synonym", "abbreviation"), weights={"narrower": 1}, threshold=0.2)
    assert opts.types == ("abbreviation", "related_concept", "synonym") and opts.min_weight == 0.2
    assert dict(opts.weights or {}) == {"narrower": 1.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.limit = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        opts.weights["narrower"] = 0.1  # type: ignore[index]
    with pytest.raises(UsageError):
        opts.replace(limit=-5)                        # a changed copy is validated too


def test_to_dict_from_dict_round_trip_through_json():
    opts = QueryOptions(context="board games", expand_depth=2, min_weight=0.2, context_threshold=0.6,
                        types=("synonym",), weights={"narrower": 0.9}, method="hybrid", limit=3, explain=True,
                        column_weights=(2.0, 1.0, 1.5, 1.0), use_learned=False)
    data = json.loads(json.dumps(opts.to_dict()))
    assert QueryOptions.from_dict(data) == opts
    assert QueryOptions.from_dict({**data, "keywords_from": "given", "identifiers": []}) == opts


def test_the_history_records_the_options_and_refine_runs_with_them(kb):
    opts = QueryOptions(method="fulltext", limit=2, expand_depth=0, min_weight=0.5)
    qid = kb.query(QUESTION, options=opts)["query_id"]
    assert kb.learning.recorded_options(qid) == opts
    refined = kb.learning.refine(qid, ["reinforcement learning"])
    assert refined["query_id"] == qid
    assert refined["query"]["method_requested"] == "fulltext" and refined["count"] <= 2
    assert (refined["query"]["expand_depth"], refined["query"]["min_weight"]) == (0, 0.5)
    assert kb.learning.recorded_options(qid) == opts


def test_refine_cli_changes_only_the_options_it_is_given(kb, cli):
    qid = kb.query(QUESTION, options=QueryOptions(method="fulltext", limit=2))["query_id"]
    res = cli("refine", str(qid), "-k", "reinforcement learning", "--expand-depth", "0", "--db", kb.db_path,
              "--format", "json")
    assert res.exit_code == 0, res.output
    assert kb.learning.recorded_options(qid) == QueryOptions(method="fulltext", limit=2, expand_depth=0)


@pytest.mark.parametrize("stored", [{"limit": 5000, "method": "nope"}, {"column_weights": 5},
                                    {"types": ["bogus"], "expand_depth": "two"}])
def test_refine_survives_recorded_options_that_are_not_valid_any_more(kb, cli, stored):
    """Options read back from the index (an import, an edited or older index) are data: one that is not
    valid takes its default instead of making the query impossible to refine (or crashing it), and the
    user's own options still apply."""
    qid = kb.query(QUESTION, options=QueryOptions(limit=2))["query_id"]
    with kb.conn:
        kb.conn.execute("UPDATE query_attempts SET options = ? WHERE query_id = ?", (json.dumps(stored), qid))
    assert kb.learning.recorded_options(qid, limit=3).limit == 3
    res = cli("refine", str(qid), "-k", "reinforcement learning", "--limit", "0", "--db", kb.db_path,
              "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["query_id"] == qid and _recorded(kb, qid)["limit"] == 0
    with pytest.raises(UsageError, match="limit"):
        kb.learning.recorded_options(qid, limit=-1)     # the user's own bad value is still bad usage


def test_cli_mcp_chat_and_api_build_the_same_options_and_get_the_same_results(kb, cli):
    pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")
    from kb_indexer.mcp.server import kb_query_impl

    api = kb.query(QUESTION, options=QueryOptions(method="hybrid", limit=3))
    res = cli("query", QUESTION, "--method", "hybrid", "--limit", "3", "--no-stale-check", "--db", kb.db_path,
              "--format", "json")
    assert res.exit_code == 0, res.output
    by_cli = json.loads(res.stdout)
    by_mcp = kb_query_impl(str(kb.db_path), QUESTION, None, "hybrid", 3, None, None)
    assert _ranked(by_cli) == _ranked(api)
    assert [r["filepath"] for r in by_mcp["results"]] == [p for p, _ in _ranked(api)]
    recorded = [_recorded(kb, q) for q in (api["query_id"], by_cli["query_id"], by_mcp["query_id"])]
    assert recorded[0] == recorded[1] == recorded[2]
    assert QueryOptions.from_dict(recorded[0]) == QueryOptions(method="hybrid", limit=3)

    _, info = run_tool(kb, "kb_query", {"question": QUESTION, "limit": 3})
    assert QueryOptions.from_dict(_recorded(kb, info["query_id"])) == QueryOptions(limit=3)


@pytest.mark.parametrize("flags, message", [
    (["--types", "bogus"], "Unknown similarity type 'bogus'"),
    (["--weight", "contrast=3"], "Weight for contrast must be a number between 0 and 1"),
])
def test_cli_options_invalid_for_query_options_are_bad_usage(kb, run, flags, message):
    res = run("query", QUESTION, *flags, "--db", kb.db_path, "--format", "json")
    assert res.returncode == 2 and message in res.error()["message"]


def test_the_backend_options_the_api_takes_import_from_the_api():
    """The README's API calls take ``llm=LLMOptions(...)`` / ``embed=EmbedOptions(...)``: both come from
    kb_indexer.api (loaded on first use), like QueryOptions."""
    from kb_indexer.api import EmbedOptions, LLMOptions
    from kb_indexer.llm import config

    assert (LLMOptions, EmbedOptions) == (config.LLMOptions, config.EmbedOptions)
