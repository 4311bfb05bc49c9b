"""docs/agents.md's Python MCP client runs as shown: with the official SDK, against `kbindex mcp` started by
`kbindex` on PATH in a folder with an index, it prints a query id and paths and records feedback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from tests.conftest import BUNDLED_KB, REPO  # noqa: E402

BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_the_python_client_in_the_agents_page_runs(tmp_path, run):
    code = BLOCK.search((REPO / "docs" / "agents.md").read_text(encoding="utf-8")).group(1)
    assert "ClientSession" in code
    project = tmp_path / "project"
    shutil.copytree(BUNDLED_KB, project / "knowledge-base")
    assert run("init", cwd=project).returncode == 0 and run("sync", cwd=project).returncode == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kbindex"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REPO / "kbindex.py"}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    query_id, paths = proc.stdout.split(" ", 1)
    assert int(query_id) == 1 and ".md" in paths
    shown = run("feedback", "--show", "1", "--format", "json", cwd=project)
    assert shown.returncode == 0 and shown.json()["feedback"], shown.stdout
