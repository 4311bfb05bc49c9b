"""Ctrl-C stops a long SQLite statement during a query (it would otherwise run to its end)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

_SCRIPT = r"""
import sqlite3, sys
from kb_indexer.store.interrupt import interruptible
conn = sqlite3.connect(":memory:")
print("ready", flush=True)
try:
    with interruptible(conn):
        conn.execute("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 4000000000) "
                     "SELECT count(*) FROM r").fetchone()
    print("finished")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_stops_a_long_statement():
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)  # inside the statement (it runs for minutes)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert out.strip() == "interrupted"


def test_other_errors_pass_through():
    import sqlite3

    import pytest

    from kb_indexer.store.interrupt import interruptible

    conn = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        with interruptible(conn):
            conn.execute("SELECT * FROM missing")
    conn.execute("SELECT 1")  # the handler is gone afterwards


# Ctrl-C at the very start of a run: the signal arrives while a module imports (Typer, the app: a tenth of a
# second or more on a loaded machine) or while Typer builds the command line. A finder on sys.meta_path sends
# SIGINT to the process itself when the named module is first imported, so the KeyboardInterrupt is raised
# inside that import, as a real Ctrl-C at that moment would raise it.
_EARLY = r"""
import os, runpy, signal, sys
target, entry = sys.argv[1], sys.argv[2]

class CtrlC:
    def find_spec(self, name, path=None, target_=None):
        if name == target:
            os.kill(os.getpid(), signal.SIGINT)
        return None

if target == "typer.main.get_command":          # after the imports: while Typer builds the command group
    import typer.main
    build = typer.main.get_command
    def get_command(app):
        os.kill(os.getpid(), signal.SIGINT)
        return build(app)
    typer.main.get_command = get_command
else:
    sys.meta_path.insert(0, CtrlC())
sys.argv = ["kbindex", "--version"]
if entry == "kbindex.py":                       # the checkout's shim
    runpy.run_path(os.path.join(os.environ["REPO"], "kbindex.py"), run_name="__main__")
elif entry == "-m":                             # python -m kb_indexer
    runpy.run_module("kb_indexer", run_name="__main__", alter_sys=True)
else:                                           # the installed `kbindex` script: import main, call it
    from kb_indexer.cli import main
    sys.exit(main())
"""


@pytest.mark.parametrize("target", ["typer", "kb_indexer.cli.app", "typer.main.get_command"])
@pytest.mark.parametrize("entry", ["kbindex.py", "-m", "script"])
def test_ctrl_c_while_starting_says_interrupted_and_exits_130(target, entry):
    from tests.conftest import REPO

    env = dict(os.environ, REPO=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _EARLY, target, entry], capture_output=True, text=True,
                          timeout=60, env=env, cwd=REPO.parent)
    assert (proc.returncode, proc.stderr, proc.stdout) == (130, "Interrupted.\n", "")
