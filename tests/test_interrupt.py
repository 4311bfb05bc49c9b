"""Ctrl-C stops a long SQLite statement during a query (it would otherwise run to its end)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

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
