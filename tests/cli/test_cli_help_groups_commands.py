"""`kbindex --help` lists the commands in groups (search, learning, index, LLM, skills and context, servers), each
with a one-line help that is whole (no "...") at 80 and 100 columns; a mistyped command name gets the closest
names as a hint; `enrich` without documents says how to name them, with examples."""

from __future__ import annotations

import json
import re

import pytest

from kb_indexer.cli.registry import COMMANDS, PANELS

GROUPS = ("skills", "context", "model", "learned", "cache")


def _sections(text: str) -> dict[str, list[str]]:
    """The help's sections after Options: heading -> its lines."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.split("Options:", 1)[1].splitlines():
        if re.match(r"^\S.*:$", line):
            current = line[:-1]
            out[current] = []
        elif current is not None and line.strip():
            out[current].append(line)
    return out


@pytest.mark.parametrize("columns", [80, 100])
def test_the_commands_are_listed_in_groups_each_help_on_one_whole_line(run, columns):
    res = run("--help", env={"COLUMNS": str(columns)})
    assert res.returncode == 0, res.stderr
    sections = _sections(res.stdout)
    commands = {title: lines for title, lines in sections.items() if title != "Options"}
    assert list(commands) == list(PANELS)
    for title, lines in commands.items():
        assert [line.split()[0] for line in lines] == list(PANELS[title]), title   # one line per command
    listed = [line for lines in commands.values() for line in lines]
    assert len(listed) == len(COMMANDS) == 39
    assert not [line for line in listed if "..." in line or len(line) > columns]


@pytest.mark.parametrize("group", GROUPS)
def test_a_command_group_lists_whole_one_line_helps_at_80_columns(run, group):
    res = run(group, "--help", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.split("Commands:", 1)[1].splitlines() if line.strip()]
    assert lines and not [line for line in lines if "..." in line or not line.startswith("  ")
                          or line.startswith("   ")]


def test_a_mistyped_command_gets_did_you_mean_on_stderr_and_exit_2(run):
    res = run("serach", "reinforcement learning")
    assert (res.returncode, res.stdout) == (2, "")
    assert "No such command 'serach'. Did you mean 'search'?" in res.stderr
    assert "enrich" not in res.stderr                # only the names about as close as the best
    assert "Did you mean" not in run("xyzzy").stderr   # nothing close: no hint


def test_a_mistyped_command_under_format_json_is_a_json_usage_error(run):
    res = run("lern", "--format", "json")
    assert (res.returncode, res.stdout) == (2, "")
    error = json.loads(res.stderr)
    assert error["exit_code"] == 2 and error["error"]["code"] == "usage"
    assert error["error"]["message"] == "No such command 'lern'. Did you mean 'learn'?"


def test_a_mistyped_subcommand_gets_did_you_mean_too(run):
    res = run("skills", "mtach", "hello")
    assert res.returncode == 2 and "Did you mean 'match'?" in res.stderr


def test_enrich_without_documents_says_how_to_name_them_with_examples(run, tmp_path):
    (tmp_path / "knowledge-base").mkdir()
    assert run("init").returncode == 0
    res = run("enrich", "--no-llm")
    assert (res.returncode, res.stdout) == (2, "")
    assert "FILES, --all or --missing-only" in res.stderr
    assert "e.g. `kbindex enrich --missing-only --no-llm`" in res.stderr and "`kbindex enrich --all`" in res.stderr
