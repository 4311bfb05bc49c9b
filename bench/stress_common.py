"""Shared helpers of the stress suite (bench/stress.py): run this checkout's kbindex, judge its output, check
an index with sqlite3."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT = 30.0


REPO = Path(__file__).resolve().parent.parent


def kbindex_cmd() -> list[str]:
    """This checkout's ``kbindex`` under this interpreter (``kbindex.py`` puts the checkout first on
    ``sys.path``): never a console script first on PATH, which may be a stale install."""
    return [sys.executable, str(REPO / "kbindex.py")]


@dataclass
class Outcome:
    args: list
    code: int | None          # None: timed out
    stdout: bytes
    stderr: bytes
    seconds: float

    def json(self):
        return json.loads(self.stdout)


def kb_run(*args, db: Path | None = None, cwd: Path | None = None, timeout: float = TIMEOUT,
           json_out: bool = True) -> Outcome:
    argv = kbindex_cmd() + [a if isinstance(a, bytes) else str(a) for a in args]
    if db is not None:
        argv += ["--db", str(db)]
    if json_out:
        argv += ["--format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBINDEX_", "OLLAMA_", "GEMINI_", "OPENAI_"))}
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = None, exc.stdout or b"", exc.stderr or b""
    return Outcome(list(args), code, out, err, time.perf_counter() - start)


def problem_with(out: Outcome, json_out: bool = True) -> str | None:
    """Why an outcome breaks the contract (None when it keeps it; exit 1 with a clean error is fine)."""
    if out.code is None:
        return f"hung (> {TIMEOUT:.0f} s)"
    if out.code not in (0, 1, 2):
        return f"exit {out.code}"
    if b"Traceback" in out.stderr:
        return "traceback on stderr"
    if b"database is locked" in out.stderr + out.stdout:
        return "database is locked"
    if json_out and out.code == 0 or json_out and out.stdout.strip():
        try:
            json.loads(out.stdout)
        except ValueError:
            return "non-JSON stdout under --format json"
    if json_out and out.code != 0:
        try:
            error = json.loads(out.stderr)["error"]
        except (ValueError, KeyError, TypeError):
            return "error is not a JSON object on stderr"
        if error.get("code") == "internal":
            return f"internal error: {error.get('message', '')[:120]}"
    return None


def integrity_problem(db: Path) -> str | None:
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
            fks = conn.execute("PRAGMA foreign_key_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"index unreadable: {exc}"
    if ok != "ok":
        return f"integrity_check: {ok}"
    return f"foreign_key_check: {fks[:3]}" if fks else None


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


@dataclass
class Section:
    name: str
    cases: int = 0
    failures: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.failures.append(message)
        print(f"  FAIL {self.name}: {message}", file=sys.stderr)


def scalar(db: Path, sql: str, *params):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()

