"""The design document's own example keywords file is accepted: a keyword listed under `categories`
but missing from `keywords` is indexed as a keyword (with its category) and named in a warning on
stderr, instead of refusing the file."""

from __future__ import annotations

import json

from tests.helpers import write_doc

#: Literally the "Document Keywords JSON" example of kbindex-design.md ("experience learning",
#: "Richard Sutton" and "Yann LeCun" are categorised but not in "keywords").
DESIGN_KEYWORDS = json.loads("""
{
  "filepath": "ai-llm-vs-reinforcement-learning.md",
  "title": "AI: LLMs vs Reinforcement Learning",
  "summary": "Richard Sutton argues LLMs are dead end for AGI; true intelligence requires experience learning through direct world interaction.",
  "keywords": [
    "reinforcement learning",
    "RL",
    "LLM",
    "large language models",
    "AGI",
    "world models"
  ],
  "categories": {
    "primary": ["reinforcement learning", "LLM", "AGI"],
    "concepts": ["world models", "experience learning"],
    "people": ["Richard Sutton", "Yann LeCun"]
  }
}
""")
MISSING = ["experience learning", "Richard Sutton", "Yann LeCun"]


def _write(kbdir):
    write_doc(kbdir, "ai-llm-vs-reinforcement-learning.md", "# AI\n\nSutton on LLMs and RL.\n",
              keywords=DESIGN_KEYWORDS)


def test_design_keywords_file_is_indexed_with_categorised_keywords_added(small):
    kb, kbdir = small
    _write(kbdir)
    result = kb.sync()
    assert result["errors"] == [] and result["added"] == 1
    messages = [w["message"] for w in result["warnings"]]
    assert len(messages) == 3
    for kw in MISSING:
        assert any(repr(kw) in m and "not in 'keywords'" in m for m in messages), (kw, messages)
    shown = kb.show("ai-llm-vs-reinforcement-learning.md")
    got = {k["keyword"].lower(): k["category"] for k in shown["keywords"]}
    assert got["experience learning"] == "concepts"
    assert got["richard sutton"] == got["yann lecun"] == "people"
    assert got["world models"] == "concepts" and got["reinforcement learning"] == "primary"
    assert got["rl"] is None and len(got) == 9
    assert [r["filepath"] for r in kb.search(["experience learning"])["results"]] == [
        "ai-llm-vs-reinforcement-learning.md"]


def test_cli_add_warns_on_stderr_and_keeps_stdout_json(tmp_path, run):
    kbdir = tmp_path / "knowledge-base"
    kbdir.mkdir()
    _write(kbdir)
    db = tmp_path / "kbindex.db"
    assert run("init", "--db", db, "--kb", kbdir, cwd=tmp_path).returncode == 0
    res = run("add", "ai-llm-vs-reinforcement-learning.md", "--db", db, "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.json()["filepath"] == "ai-llm-vs-reinforcement-learning.md"
    warned = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 3 and all("indexed as a keyword" in w for w in warned)
    res = run("sync", "--db", db, "--format", "json", cwd=tmp_path)
    assert res.returncode == 0 and res.json()["unchanged"] == 1


def test_a_categorised_keyword_in_two_categories_is_added_once(small):
    kb, kbdir = small
    write_doc(kbdir, "doc.md", "# Doc\n\nbody\n", keywords={
        "summary": "s", "keywords": ["a"], "categories": {"primary": ["b"], "concepts": ["B ", "a"]}})
    result = kb.sync()
    assert result["errors"] == [] and len(result["warnings"]) == 1
    assert {k["keyword"].lower(): k["category"] for k in kb.show("doc.md")["keywords"]} == {"a": "concepts", "b": "primary"}


def test_a_bad_categorised_keyword_is_still_refused(small):
    kb, kbdir = small
    write_doc(kbdir, "doc.md", "# Doc\n\nbody\n", keywords={
        "summary": "s", "keywords": ["a"], "categories": {"primary": ["   "]}})
    result = kb.sync()  # the keywords file is refused; the document is indexed without it
    assert result["added"] == 1 and [e["file"] for e in result["errors"]] == ["doc.keywords.json"]
    assert "categories.primary" in result["errors"][0]["message"] and kb.keywords("doc.md")["keywords"] == []
