"""A command run imports only its own command module; `--help` still lists every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kb_indexer.cli.registry import COMMANDS, MODULES


_REGISTERED = r"""
import importlib, json
import typer.main as tm
from kb_indexer.cli.app import app
from kb_indexer.cli.registry import MODULES
found = {}
for module in MODULES:
    before_c, before_g = len(app.registered_commands), len(app.registered_groups)
    importlib.import_module(f"kb_indexer.cli.{module}")
    for info in app.registered_commands[before_c:]:
        found.setdefault(info.name or tm.get_command_name(info.callback.__name__), module)
    for group in app.registered_groups[before_g:]:
        found.setdefault(group.name, module)
print(json.dumps(found))
"""


def test_the_registry_names_every_registered_command_and_its_module():
    import json

    proc = subprocess.run([sys.executable, "-c", _REGISTERED], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == COMMANDS


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
    assert _modules_loaded_for("search") == {"app", "output", "registry", "results", "search"}
    assert _modules_loaded_for("relate") == {"app", "llm", "output", "registry", "similarity"}
    assert _modules_loaded_for("init") == {"app", "database", "output", "registry"}


def test_help_lists_every_command(run):
    res = run("--help")
    assert res.returncode == 0
    listed = [line.split()[0] for line in res.stdout.split("Commands:", 1)[1].splitlines() if line.strip()]
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
