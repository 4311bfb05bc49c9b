"""The repository's own skill (skills/kbindex-search/SKILL.md) is a valid Agent Skill that kbindex indexes."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO

SKILL_DIR = REPO / "skills"


def test_bundled_skill_parses_and_syncs(small):
    k, _ = small
    out = k.skills.sync([str(SKILL_DIR)])
    assert out["errors"] == [] and "kbindex-search" in out["added"]
    shown = k.skills.show("kbindex-search")
    assert "Use when" in shown["description"] and "kbindex query" in shown["body"]


def test_bundled_skill_matches_a_request_to_search_the_notes(small):
    k, _ = small
    k.skills.sync([str(SKILL_DIR)])
    out = k.skills.match("search our knowledge base notes for the retry policy")
    assert [m["name"] for m in out["matched"]] == ["kbindex-search"]


def test_every_method_it_names_exists():
    text = (SKILL_DIR / "kbindex-search" / "SKILL.md").read_text(encoding="utf-8")
    from kb_indexer.search.method import METHODS

    for method in set(re.findall(r"--method (\w+)", text)):
        assert method in METHODS


def test_it_tells_when_to_use_each_method_auto_may_choose():
    """An agent reading the skill learns of every method `--method auto` can pick (semantic included)."""
    text = (SKILL_DIR / "kbindex-search" / "SKILL.md").read_text(encoding="utf-8")
    table = re.search(r"## Choosing `--method`(.*?)\n## ", text, re.S).group(1)
    for method in ("keyword", "fulltext", "hybrid", "semantic"):
        assert f"| `{method}`" in table or f"| `{method}` (" in table, method
        assert f"--method {method}" in text, method


def _commands(text: str) -> list[str]:
    fenced = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = [ln.split("  #")[0].strip() for block in fenced for ln in block.splitlines()]
    inline = re.findall(r"^- `(kbindex [^`]+)`", text, re.M)
    return [ln for ln in lines + inline if ln.startswith("kbindex ")]


def test_every_command_it_shows_runs_on_the_bundled_knowledge_base(kb, cli):
    import shlex

    text = (SKILL_DIR / "kbindex-search" / "SKILL.md").read_text(encoding="utf-8")
    commands = _commands(text)
    assert len(commands) >= 7
    query_id = None
    for line in commands:
        args = shlex.split(line)[1:]
        if "QUERY_ID" in args:
            args[args.index("QUERY_ID")] = str(query_id)
        res = cli(*args, "--db", kb.db_path)
        assert res.exit_code == 0, (line, res.stderr)
        if args[0] == "query" and query_id is None:
            query_id = json.loads(res.stdout)["query_id"]
