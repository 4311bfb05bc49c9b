"""Document front matter is YAML, read by one function (kb_indexer.front_matter) for documents, enrich and
skills: comments, quotes, flow and block lists, block scalars and escapes read right; a block that cannot
be read is reported in sync's ``errors`` (file, YAML message, line) and the document is indexed without it;
aliases, deep nesting and oversized blocks are refused, never expanded or crashed on."""

from __future__ import annotations

import json
import re

import pytest

from helpers import fulltext_hits, write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.front_matter import MAX_FRONT_MATTER_BYTES
from kb_indexer.skills.parse import SkillParseError, parse_skill

BODY = "# Heading Title\n\nFirst paragraph of the body.\n"


def _synced(small, text: str, name: str = "doc.md") -> tuple[dict, dict]:
    handle, kbdir = small
    (kbdir / name).write_bytes(text.encode("utf-8"))
    return handle.sync(), handle.show(name)


def _in_body(handle, word: str) -> bool:
    return fulltext_hits(handle.conn, word) > 0


def _keywords(shown: dict) -> list[str]:
    return [k["keyword"] for k in shown["keywords"]]


def test_flow_list_with_a_trailing_comment(small):
    res, shown = _synced(small, '---\ntags: [reinforcement learning, "q-learning"]   # core topics\n---\n' + BODY)
    assert res["errors"] == []
    assert _keywords(shown) == ["reinforcement learning", "q-learning"]


@pytest.mark.parametrize("style, summary", [
    (">", "A folded description that spans two lines."),
    ("|", "A literal description\nthat spans two lines."),
    (">-", "A folded description that spans two lines."),
])
def test_folded_and_literal_block_scalars(small, style, summary):
    lines = (["A folded description", "that spans two lines."] if ">" in style
             else ["A literal description", "that spans two lines."])
    text = f"---\ndescription: {style}\n  {lines[0]}\n  {lines[1]}\ntitle: Scalars\n---\n" + BODY
    res, shown = _synced(small, text)
    assert res["errors"] == []
    assert shown["summary"] == summary and shown["title"] == "Scalars"


def test_single_quote_escapes_comments_and_quoted_colons(small):
    text = ("---\n# a comment line\ntitle: 'It''s a \"title\": part 1'  # trailing comment\n"
            'summary: "Use when: the reader asks # not a comment"\n'
            "keywords: ['don''t panic', \"a: b\"]\n---\n" + BODY)
    res, shown = _synced(small, text)
    assert res["errors"] == []
    assert shown["title"] == 'It\'s a "title": part 1'
    assert shown["summary"] == "Use when: the reader asks # not a comment"
    assert _keywords(shown) == ["don't panic", "a: b"]


def test_block_list_and_keywords_before_tags(small):
    text = "---\nkeywords:\n  - alpha   # first\n  - 'beta, gamma'\n  -  delta\ntags: [ignored]\n---\n" + BODY
    res, shown = _synced(small, text)
    assert res["errors"] == []
    assert _keywords(shown) == ["alpha", "beta, gamma", "delta"]


def test_scalars_keep_the_text_written(small):
    """Dates, numbers and booleans are keywords and titles as written (YAML 1.1 would make ``no`` False
    and ``3.10`` 3.1); nested lists are flattened."""
    text = "---\ntitle: 2024\ntags: [2024-05-01, 3.10, no, true, 0x1F, [nested, list]]\n---\n" + BODY
    res, shown = _synced(small, text)
    assert res["errors"] == []
    assert shown["title"] == "2024"
    assert _keywords(shown) == ["2024-05-01", "3.10", "no", "true", "0x1F", "nested", "list"]


def test_unicode_crlf_and_bom(small):
    text = ("\ufeff---\ntitle: Café — 東京\ntags: [naïve bayes, 機械学習]\ndescription: >\n  Über\n  alles\n---\n"
            + BODY).replace("\n", "\r\n")
    res, shown = _synced(small, text)
    assert res["errors"] == []
    assert shown["title"] == "Café — 東京" and shown["summary"] == "Über alles"
    assert _keywords(shown) == ["naïve bayes", "機械学習"]


def test_a_rule_below_the_first_line_is_not_front_matter(small):
    text = "Intro line.\n---\ntags: [not, front, matter]\n---\n" + BODY
    res, shown = _synced(small, text)
    assert res["errors"] == [] and _keywords(shown) == []
    assert shown["title"] == "Heading Title"


def test_an_unclosed_block_is_reported_and_the_text_indexed_as_markdown(small):
    handle, _ = small
    res, shown = _synced(small, "---\ntitle: Never closed\ntags: [a, b]\n\n" + BODY)
    assert [(e["file"], e["indexed"]) for e in res["errors"]] == [("doc.md", True)]
    assert "not closed by a line '---'" in res["errors"][0]["message"]
    assert shown["title"] == "Heading Title" and _keywords(shown) == []
    assert _in_body(handle, "closed")  # all of it is body text


@pytest.mark.parametrize("block, line, problem", [
    ("title: Part 1: zebra\ntags: [a]\n", 2, "mapping values are not allowed"),
    ("title: zebra\ntags: [a, b\n", 4, "expected ',' or ']'"),
    ("- zebra\n- a list\n", None, "not a mapping of keys to values"),
    ("keywords: [zebra]\ntitle: One\nkeywords: [other]\n", 4, "the key 'keywords' is written twice"),
    ("title: zebra\ntitle: Second\n", 3, "the key 'title' is written twice"),
])
def test_an_invalid_block_is_an_error_and_the_document_is_indexed_without_it(small, block, line, problem):
    handle, _ = small
    res, shown = _synced(small, "---\n" + block + "---\n" + BODY)
    [error] = res["errors"]
    assert error["file"] == "doc.md" and error["indexed"] is True and problem in error["message"]
    if line:
        assert f"(line {line}," in error["message"]
    assert res["added"] == 1
    assert shown["title"] == "Heading Title" and shown["summary"] == "First paragraph of the body."
    assert _keywords(shown) == []
    assert _in_body(handle, "paragraph") and not _in_body(handle, "zebra")  # the block is not body text


def test_wrong_types_are_errors_and_the_other_keys_are_read(small):
    res, shown = _synced(small, "---\ntitle: Kept\ntags: {a: b}\nsummary: [x, y]\n---\n" + BODY)
    [error] = res["errors"]
    assert "'tags' must be a list of keywords" in error["message"] and "a mapping" in error["message"]
    assert "'summary' must be text, not a list" in error["message"]
    assert shown["title"] == "Kept" and _keywords(shown) == []
    assert shown["summary"] == "First paragraph of the body."


def _alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "---\n" + "\n".join(lines) + f"\ntags: *a{levels - 1}\n---\n" + BODY


def test_a_billion_laughs_block_is_refused(small):
    res, shown = _synced(small, _alias_bomb())
    [error] = res["errors"]
    assert "(line 3, column 10): YAML aliases are not allowed in front matter" in error["message"]
    assert _keywords(shown) == [] and shown["title"] == "Heading Title"


# Our own check on the parser's events, or libyaml's own limit (PyYAML 6.0.4's libyaml stops deep nesting
# itself, at a depth it reaches while reading ahead): either way the block is refused, never composed.
TOO_DEEP = r"nested more than 64 levels deep|exceeded maximum nesting depth"


def test_oversized_and_deeply_nested_blocks_are_refused(small):
    handle, kbdir = small
    write_doc(kbdir, "big.md", "---\ntitle: " + "x" * (MAX_FRONT_MATTER_BYTES + 1) + "\n---\n" + BODY)
    write_doc(kbdir, "flow.md", "---\ntags: " + "[" * 40_000 + "]" * 40_000 + "\n---\n" + BODY)
    write_doc(kbdir, "block.md", "---\ntags:\n" + "- " * 40_000 + "x\n---\n" + BODY)
    res = handle.sync()
    messages = {e["file"]: e["message"] for e in res["errors"]}
    assert f"larger than {MAX_FRONT_MATTER_BYTES} bytes" in messages["big.md"]
    assert re.search(TOO_DEEP, messages["flow.md"]) and re.search(TOO_DEEP, messages["block.md"])
    assert res["added"] == 3


def test_cli_sync_reports_the_error_without_saying_skipped(project, run):
    write_doc(project / "knowledge-base", "bad.md", "---\ntitle: a: b\n---\n# Bad\n\nText.\n")
    assert run("init", "-f", "json", cwd=project).returncode == 0
    res = run("sync", "--format", "json", cwd=project)
    assert res.returncode == 0
    [error] = [e for e in res.json()["errors"] if e["file"] == "bad.md"]
    assert error["indexed"] is True and "(line 2, column 9)" in error["message"]
    assert "warning: bad.md: invalid YAML front matter (line 2" in res.stderr and "skipped bad.md" not in res.stderr
    shown = run("show", "bad.md", "--format", "json", cwd=project).json()
    assert shown["title"] == "Bad"


def test_add_reports_the_error(small):
    handle, kbdir = small
    write_doc(kbdir, "doc.md", "---\ntags: [a\n---\n" + BODY)
    out = handle.add("doc.md")
    assert out["action"] == "added" and "invalid YAML front matter" in out["errors"][0]


def test_enrich_starts_from_the_front_matter_as_read(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "fm.md", "---\ntitle: 'It''s front'\ntags: [alpha beta, \"gamma\"]   # mine\n---\n# Heading\n\n"
                             "Delta waves and epsilon noise meet zeta functions.\n")
    with KnowledgeBase.init(tmp_path / "kbindex.db", root)[0] as kb:
        kb.sync()
        kb.enrich.documents(["fm.md"], use_llm=False)
        data = json.loads((root / "fm.keywords.json").read_text(encoding="utf-8"))
    assert data["title"] == "It's front" and data["keywords"][:2] == ["alpha beta", "gamma"]


@pytest.mark.parametrize("head", ["deep:\n" + "- " * 5_000 + "x\n", "deep: " + "[" * 5_000 + "]" * 5_000 + "\n"])
def test_skills_use_the_same_bounds(head):
    with pytest.raises(SkillParseError, match=TOO_DEEP):
        parse_skill(("---\nname: deep\ndescription: d\n" + head + "---\n").encode("utf-8"))


def test_yaml_tags_build_nothing(small, tmp_path):
    """Only text, lists and mappings are built from a document's front matter: no tag is applied."""
    target = tmp_path / "pwned"
    text = (f"---\ntitle: !!binary aGk=\ntags: !!python/object/apply:os.system [\"touch {target}\"]\n"
            "summary: !!int '12'\n---\n" + BODY)
    res, shown = _synced(small, text)
    assert res["errors"] == [] and not target.exists()
    assert shown["title"] == "aGk=" and shown["summary"] == "12" and _keywords(shown) == [f"touch {target}"]


def test_a_list_as_a_key_is_an_error(small):
    res, shown = _synced(small, "---\n? [a, b]\n: c\ntitle: T\n---\n" + BODY)
    [error] = res["errors"]
    assert "(line 2, column 3): a key must be text" in error["message"]
    assert shown["title"] == "Heading Title"


def test_enrich_does_not_write_past_a_block_it_cannot_read(tmp_path):
    """A keywords file written now would hide the front matter's keywords once the block is fixed."""
    root = tmp_path / "kb"
    write_doc(root, "fm.md", "---\ntitle: Part 1: broken\ntags: [alpha, beta]\n---\n# Heading\n\n"
                             "Delta waves and epsilon noise meet zeta functions.\n")
    with KnowledgeBase.init(tmp_path / "kbindex.db", root)[0] as kb:
        kb.sync()
        out = kb.enrich.documents(["fm.md"], use_llm=False)
    [entry] = out["documents"]
    assert entry["action"] == "failed" and "invalid YAML front matter (line 2" in entry["error"]
    assert not (root / "fm.keywords.json").exists()
