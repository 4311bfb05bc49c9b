"""SKILL.md front matter: real YAML (quoted strings, block scalars, unicode), required fields, clear errors."""

from __future__ import annotations

import json
import re

import pytest

from kb_indexer.skills.parse import SkillParseError, parse_skill


def parse(text: str):
    return parse_skill(text.encode("utf-8"))


def test_plain_and_quoted_values_with_metadata_kept():
    s = parse('---\nname: "pdf-tools"\ndescription: \'Fill PDF forms: use when a form has fields.\'\n'
              "license: MIT\nallowed-tools: [Bash, Read]\nversion: 2024-05-01\n---\n# PDF\n\nSteps.\n")
    assert s.name == "pdf-tools"
    assert s.description == "Fill PDF forms: use when a form has fields."
    assert s.metadata == {"license": "MIT", "allowed-tools": ["Bash", "Read"], "version": "2024-05-01"}
    assert s.body == "# PDF\n\nSteps."


def test_literal_and_folded_block_scalars():
    s = parse("---\nname: notes\ndescription: |\n  Line one.\n  Line two.\n---\nbody\n")
    assert s.description == "Line one.\nLine two."
    s = parse("---\nname: notes\ndescription: >\n  Folded one\n  and two.\n---\n")
    assert s.description == "Folded one and two."
    assert s.body == ""


def test_unicode_and_bom():
    s = parse("\ufeff---\nname: café-menü\ndescription: 日本語の説明と한국어\n---\n本文\n")
    assert s.name == "café-menü" and s.description == "日本語の説明と한국어" and s.body == "本文"


@pytest.mark.parametrize("text, message", [
    ("---\ndescription: no name here\n---\n", "no 'name'"),
    ("---\nname: x-skill\n---\n", "no 'description'"),
    ("---\nname: x-skill\ndescription: ''\n---\n", "'description' is empty"),
    ("---\nname: 42\ndescription: numbers are not names\n---\n", "'name' must be a string"),
    ("---\nname: x\ndescription: [a, b]\n---\n", "'description' must be a string"),
    ("# just markdown\n", "no YAML front matter"),
    ("---\nname: x\ndescription: never closed\n", "not closed"),
    ("---\n- a\n- b\n---\n", "not a mapping"),
])
def test_missing_or_wrong_fields_are_errors(text, message):
    with pytest.raises(SkillParseError, match=message):
        parse(text)


def test_bad_yaml_names_the_line():
    with pytest.raises(SkillParseError, match=r"invalid YAML front matter \(line 3.*mapping values"):
        parse("---\nname: x\ndescription: Use when: anything\n---\n")


def test_non_utf8_file_is_an_error():
    with pytest.raises(SkillParseError, match="not UTF-8"):
        parse_skill(b"---\nname: x\ndescription: caf\xe9\n---\n")


def _alias_bomb() -> str:
    lines = ["---", "name: bomb", "description: A billion laughs.",
             "a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    return "\n".join(lines + ["---", ""])


def test_yaml_aliases_are_refused():
    text = _alias_bomb()
    assert len(text) < 500
    with pytest.raises(SkillParseError, match="YAML aliases are not allowed in SKILL.md front matter"):
        parse(text)
    with pytest.raises(SkillParseError, match=r"line 5.*aliases are not allowed"):
        parse("---\nname: x\ndescription: d\nbase: &b {k: v}\nother: *b\n---\n")


def test_oversized_metadata_is_refused():
    with pytest.raises(SkillParseError, match=r"as JSON \(at most 65536\)"):
        parse("---\nname: big\ndescription: d\nnotes: " + "x" * 70_000 + "\n---\n")
    assert parse("---\nname: ok\ndescription: d\nnotes: " + "x" * 60_000 + "\n---\n").metadata["notes"]


@pytest.mark.parametrize("name, code", [('"evil\\x1b[31mred"', "U+001B"), ('"zero\\u200bwidth"', "U+200B"),
                                        ('"bidi\\u202eoverride"', "U+202E"), ('"tab\\there"', "U+0009")])
def test_control_and_format_characters_in_names_are_refused(name, code):
    with pytest.raises(SkillParseError, match=re.escape(f"control or format characters ({code}")):
        parse(f"---\nname: {name}\ndescription: d\n---\n")


def test_slashes_in_names_are_still_refused():
    with pytest.raises(SkillParseError, match="slashes"):
        parse("---\nname: a/b\ndescription: d\n---\n")


@pytest.mark.parametrize("eol", ["\r\n", "\r"])
def test_crlf_and_cr_line_ends_become_lf(eol):
    text = "---\nname: notes\ndescription: |\n  One.\n  Two.\nextra: |\n  x\n  y\n---\n# Notes\n\nStep one.\nStep two.\n"
    s = parse(text.replace("\n", eol))
    assert s.body == "# Notes\n\nStep one.\nStep two." and "\r" not in s.body
    assert s.description == "One.\nTwo." and s.metadata == {"extra": "x\ny\n"}


def test_a_key_written_twice_is_an_error_not_the_last_value():
    with pytest.raises(SkillParseError, match="the key 'description' is written twice"):
        parse_skill("---\nname: twice\ndescription: first\ndescription: second\n---\nBody\n".encode("utf-8"))


def test_a_key_a_merged_mapping_also_has_is_an_override_not_a_repeat():
    s = parse("---\nname: merged\n<<: {description: from the merge}\ndescription: written here\n---\nBody\n")
    assert s.name == "merged" and s.description == "written here"


@pytest.mark.parametrize("line", ["created: 2001-13-45", "n: !!int abc", "n: !!float abc", "n: 1" + "0" * 5000])
def test_a_value_yaml_cannot_build_is_this_skills_error(line):
    with pytest.raises(SkillParseError, match="cannot be read"):
        parse(f"---\nname: bad\ndescription: d\n{line}\n---\nbody\n")


def test_skills_sync_lists_the_bad_skill_and_syncs_the_others(empty_kb, tmp_path):
    for name, extra in (("good", ""), ("bad", "created: 2001-13-45\n")):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: the {name} one\n{extra}---\nbody\n", encoding="utf-8")
    result = empty_kb.skills.sync([str(tmp_path / "skills")])
    [error] = result["errors"]
    assert "bad" in json.dumps(error) and "cannot be read" in json.dumps(error)
    assert [s["name"] for s in empty_kb.skills.all()["skills"]] == ["good"]
