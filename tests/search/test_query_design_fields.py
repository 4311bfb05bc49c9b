"""The design's query fields: ``source`` and ``reasoning`` per result, ``keyword_search_count`` and
``grep_search_count`` on top, all consistent with the provenance (``sources``) kbindex already gave."""

from __future__ import annotations

import pytest

from helpers import kw, write_doc
from kb_indexer.search.reasoning import design_source, matched_words
from kb_indexer.api import QueryOptions


@pytest.fixture
def tagged(small):
    k, root = small
    write_doc(root, "a-exact.md", "# Exact\n\nAbout reinforcement learning in board games.\n",
              kw("exact", "reinforcement learning"))
    write_doc(root, "b-abbrev.md", "# Abbrev\n\nAgents that learn from reward.\n", kw("abbrev", "rl"))
    write_doc(root, "c-text.md", "# Text only\n\nBoard games are old; reinforcement learning is newer.\n")
    write_doc(root, "d-other.md", "# Other\n\nNothing relevant here.\n", kw("other", "cooking"))
    assert k.sync()["errors"] == []
    k.relate("rl", "reinforcement learning", "abbreviation", "RL abbreviates reinforcement learning", 1.0)
    return k


def _consistent(out):
    for r in out["results"]:
        found_by_index = bool({"keyword", "expansion", "learned"} & set(r["sources"]))
        assert r["source"] == ("keyword_search" if found_by_index else "grep_search"), r
        assert isinstance(r["reasoning"], str) and r["reasoning"].endswith(".")
    n_kw = sum(r["source"] == "keyword_search" for r in out["results"])
    assert out["keyword_search_count"] == n_kw
    assert out["grep_search_count"] == out["count"] - n_kw


def test_fields_present_and_consistent(tagged):
    out = tagged.query("reinforcement learning in board games", options=QueryOptions(record=False))
    _consistent(out)
    by = {r["filepath"]: r for r in out["results"]}
    assert by["a-exact.md"]["source"] == "keyword_search"
    assert "tagged 'reinforcement learning', your keyword" in by["a-exact.md"]["reasoning"].lower()
    assert by["b-abbrev.md"]["sources"] == ["expansion"] and by["b-abbrev.md"]["source"] == "keyword_search"
    assert "abbreviation expansion of your keyword 'reinforcement learning'" in by["b-abbrev.md"]["reasoning"]
    assert by["c-text.md"]["sources"] == ["fulltext"] and by["c-text.md"]["source"] == "grep_search"
    assert by["c-text.md"]["reasoning"].startswith("Found by full text only")
    assert "'board'" in by["c-text.md"]["reasoning"]
    assert out["keyword_search_count"] == 2 and out["grep_search_count"] == 1


def test_counts_follow_the_limit(tagged):
    out = tagged.query("reinforcement learning in board games", options=QueryOptions(limit=1, record=False))
    assert out["count"] == 1 and out["keyword_search_count"] + out["grep_search_count"] == 1
    _consistent(out)


def test_fulltext_method_is_all_grep(tagged):
    out = tagged.query("reinforcement learning", options=QueryOptions(method="fulltext", record=False))
    assert out["count"] > 0 and out["grep_search_count"] == out["count"] and out["keyword_search_count"] == 0
    _consistent(out)


def test_context_fit_named_in_reasoning(tagged):
    out = tagged.query("board games", ["reinforcement learning"],
                       options=QueryOptions(context="reward agents", record=False))
    r = {r["filepath"]: r for r in out["results"]}["b-abbrev.md"]
    assert "context match" in r["reasoning"]


def test_cli_json_has_the_fields(tagged, cli):
    res = cli("query", "reinforcement learning in board games", "--db", str(tagged.db_path), "-f", "json")
    assert res.exit_code == 0, res.output
    import json

    out = json.loads(res.stdout)
    assert {"keyword_search_count", "grep_search_count"} <= set(out)
    _consistent(out)


def test_rule_and_snippet_words():
    assert design_source(["fulltext"]) == "grep_search"
    assert design_source(["learned"]) == "keyword_search"
    assert design_source(["expansion", "fulltext"]) == "keyword_search"
    assert design_source([]) == "grep_search"
    snip = "the **agents** learn; **Note: this whole sentence is bold in the document itself.** **Rewards**"
    assert matched_words(snip, ("agent", "reward")) == ["agents", "rewards"]
