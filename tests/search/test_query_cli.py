"""`kbindex query` and `search --format markdown` on the command line."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def opts(kb):
    return ["--db", str(kb.db_path), "--kb", str(kb.kb_root)]


def test_query_json(cli, opts):
    r = cli("query", "reinforcement learning", "--format", "json", *opts)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["query"]["method"] == "hybrid" and data["count"] == len(data["results"]) > 0
    assert data["query_id"] >= 1 and data["attempt_id"] >= 1
    assert r.stderr == ""


def test_keywords_option_forms(cli, opts):
    r = cli("query", "How does AlphaGo work?", "--keywords", "AlphaGo", "Monte Carlo tree search", "-f", "json", *opts)
    q = json.loads(r.stdout)["query"]
    assert q["question"] == "How does AlphaGo work?"
    assert q["keywords"] == ["AlphaGo", "Monte Carlo tree search"] and q["keywords_from"] == "given"
    r = cli("query", "game playing", "-k", "RL", "-k", "alphago", "-f", "json", *opts)
    assert json.loads(r.stdout)["query"]["keywords"] == ["RL", "alphago"]
    # without --keywords, several arguments are one question
    r = cli("query", "reinforcement", "learning", "-f", "json", *opts)
    q = json.loads(r.stdout)["query"]
    assert q["question"] == "reinforcement learning" and q["keywords"] == ["reinforcement learning"]


def test_all_options(cli, opts):
    r = cli("query", "reinforcement learning", "--context", "sparse rewards", "--expand-depth", "2",
            "--threshold", "0.3", "--types", "abbreviation,narrower", "--types", "related_concept",
            "--weight", "narrower=0.9", "--method", "hybrid", "--limit", "3", "--explain", "-f", "json", *opts)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    q = data["query"]
    assert q["expand_depth"] == 2 and q["threshold"] == 0.3 and q["context"] == "sparse rewards"
    assert q["explain"]["types"] == ["abbreviation", "narrower", "related_concept"]
    assert q["explain"]["type_weights"]["narrower"] == 0.9
    assert {e["similarity_type"] for e in q["explain"]["expansions"]} <= {"abbreviation", "narrower",
                                                                         "related_concept"}
    assert data["count"] <= 3 and all("score_parts" in x for x in data["results"])


@pytest.mark.parametrize("args", [
    ["--method", "vector"], ["--threshold", "1.5"], ["--expand-depth", "9"], ["--limit", "-1"], ["--limit", "1001"],
    ["--types", "bogus"], ["--weight", "contrast=1.5"], ["--weight", "narrower"],
])
def test_bad_options_exit_2_with_json_error(cli, opts, args):
    r = cli("query", "learning", *args, "--format", "json", *opts)
    assert r.exit_code == 2
    assert r.stdout == ""
    assert json.loads(r.stderr)["error"]["code"] == "usage"


def test_markdown_format(cli, opts):
    r = cli("query", "reinforcement learning", "--format", "markdown", "--limit", "2", *opts)
    assert r.exit_code == 0
    out = r.stdout
    assert out.startswith("## Related Knowledge\n")
    total = json.loads(cli("query", "reinforcement learning", "--format", "json", "--limit", "2", *opts).stdout)["total"]
    assert total > 2   # the line says how many are shown of how many were found
    assert f'**Search:** "reinforcement learning" (method: hybrid, 2 of {total} results)' in out
    assert "### Result 1 - 100% match (keyword, expansion, fulltext)" in out
    assert "**Path:** ai-llm-vs-reinforcement-learning.md" in out
    assert out.count("### Result ") == 2 and out.count("\n---\n") == 2


def test_markdown_empty(cli, opts):
    r = cli("query", "the of and", "-f", "markdown", *opts)
    assert "(method: hybrid, 0 results)" in r.stdout and "No matching documents." in r.stdout


def test_search_markdown_and_json_unchanged(cli, opts, kb):
    r = cli("search", "RL", "alphago", "--format", "markdown", *opts)
    assert r.exit_code == 0
    assert r.stdout.startswith("## Related Knowledge\n")
    assert "**Search:** keywords \"RL\", \"alphago\"" in r.stdout
    assert "50% match (keyword)" in r.stdout
    r = cli("search", "RL", "alphago", "--format", "json", *opts)
    assert json.loads(r.stdout) == kb.search(["RL", "alphago"])


def test_table_format(cli, opts):
    r = cli("query", "reinforcement learning", "-n", "2", *opts)
    assert r.exit_code == 0 and "relevance_score" in r.stdout and "query_id" in r.stdout


def test_stale_warning_and_sync(cli, opts, kb):
    note = kb.kb_root / "zz-quokka.md"
    note.write_text("---\nkeywords: [quokka zyxwv]\n---\n# Quokka zyxwv\n\nStripes and arms.\n", encoding="utf-8")
    r = cli("query", "quokka zyxwv", "-f", "json", *opts)
    assert r.exit_code == 0
    assert "out of date" in r.stderr and "1 added" in r.stderr and "--sync" in r.stderr
    data = json.loads(r.stdout)
    assert data["count"] == 0              # not indexed yet; stdout is still the result, and says why (agents)
    assert data["stale"]["added"] == 1 and data["stale"]["checked"] is True and "out of date" in data["stale"]["message"]
    r = cli("query", "quokka zyxwv", "-f", "json", "--sync", *opts)
    assert r.exit_code == 0 and r.stderr == ""
    assert [x["filepath"] for x in json.loads(r.stdout)["results"]] == ["zz-quokka.md"]
    assert json.loads(r.stdout)["stale"] is None
    r = cli("query", "quokka zyxwv", "-f", "json", *opts)
    assert r.stderr == ""


def test_installed_command(run, kb):
    r = run("query", "How does AlphaGo work?", "--format", "json", "--db", kb.db_path, "--kb", kb.kb_root)
    assert r.returncode == 0, r.stderr
    data = r.json()
    assert data["query"]["method"] == "hybrid" and data["results"][0]["filepath"] == "alphago-architecture.md"
    r = run("query", "x", "--method", "nope", "--format", "json", "--db", kb.db_path)
    assert r.returncode == 2 and r.error()["code"] == "usage"


def test_markdown_block_keeps_a_documents_heading_out_of_the_prompts_headings(cli, opts):
    out = cli("query", "how do agents learn from rewards", "-n", "3", "--format", "markdown", *opts).stdout
    body = [line for line in out.splitlines() if line and not line.startswith(("## Related Knowledge", "### Result"))]
    assert not any(line.lstrip().startswith("#") for line in body), body
    assert "Reward Shaping" in out.replace("**", "")
