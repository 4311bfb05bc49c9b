"""A command run imports only its own command module; `--help` still lists every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kb_indexer.cli.registry import COMMANDS, MODULES


_REGISTERED = r"""
import importlib, json, sys
import typer.main as tm
from kb_indexer.cli.app import app
from kb_indexer.cli.registry import MODULES
for module in MODULES:
    importlib.import_module(f"kb_indexer.cli.{module}")
found = {}
for info in app.registered_commands:   # the module that defines the command
    found.setdefault(info.name or tm.get_command_name(info.callback.__name__), info.callback.__module__.rsplit(".", 1)[1])
for group in app.registered_groups:    # the module that holds the group's Typer app
    found.setdefault(group.name, next(m for m in MODULES if group.typer_instance in
                                      vars(sys.modules[f"kb_indexer.cli.{m}"]).values()))
print(json.dumps(found))
"""


def test_the_registry_names_every_registered_command_and_its_module():
    import json

    proc = subprocess.run([sys.executable, "-c", _REGISTERED], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(proc.stdout).items()) == sorted(COMMANDS.items())


_PROBE = r"""
import sys
from kb_indexer.cli import app
from typer.testing import CliRunner
res = CliRunner().invoke(app, [sys.argv[1], "--help"])
assert res.exit_code == 0, res.output
mods = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("kb_indexer.cli.") and m.count(".") == 2)
print(" ".join(mods))
"""


def _modules_loaded_for(command: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, command], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(proc.stdout.split())


def test_running_search_imports_only_its_modules():
    # search shares its result formats with query (cli/results.py), not query's LLM options
    base = {"app", "interrupted", "output", "registry"}
    assert _modules_loaded_for("search") == base | {"results", "search"}
    assert _modules_loaded_for("relate") == base | {"llm", "similarity"}
    assert _modules_loaded_for("init") == base | {"database"}


def test_help_lists_every_command(run):
    res = run("--help")
    assert res.returncode == 0
    after_options = res.stdout.split("Options:", 1)[1].split("\n\n", 1)[1]   # the groups of commands
    listed = [line.split()[0] for line in after_options.splitlines() if line.startswith("  ")]
    assert listed == list(COMMANDS)


_THIRD_PARTY = r"""
import sys
from kb_indexer.cli import app
from typer.testing import CliRunner
res = CliRunner().invoke(app, sys.argv[1:])
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_only_an_interactive_chat_imports_prompt_toolkit():
    for args in (["search", "--help"], ["query", "--help"], ["chat", "--help"], ["--help"]):
        proc = subprocess.run([sys.executable, "-c", _THIRD_PARTY, *args], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "prompt_toolkit" not in proc.stdout.split(), args


_QUERY_PROBE = """
import sys, io, contextlib
from kb_indexer.cli import main
sys.argv = ["kbindex", "query", "monte carlo tree search", "--format", "json"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
print("numpy" in sys.modules)
"""


@pytest.mark.sqlite_only("the SQLite agent path's cold start beside its .db file")
def test_a_query_on_an_index_without_vectors_or_sparse_index_never_imports_numpy(kb):
    # numpy costs a cold agent query ~50 ms: only vectors and the sparse full-text index need it
    proc = subprocess.run([sys.executable, "-c", _QUERY_PROBE], capture_output=True, text=True, timeout=60,
                          cwd=kb.db_path.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False"]
