"""`--output F` into a folder that is not there is the documented error `write_failed` for every command that takes
it (suggest-similarities reported a FileNotFoundError as a bug in kbindex)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("command", [["export"], ["export-similarities"], ["suggest-similarities", "--no-llm"]])
def test_output_into_a_missing_folder_is_write_failed(run, project, command):
    assert run("init", cwd=project).returncode == 0 and run("sync", cwd=project).returncode == 0
    target = project / "no-such-folder" / "out.json"
    res = run(*command, "--output", target, "--format", "json", cwd=project)
    assert (res.returncode, res.stdout) == (1, "")
    assert res.error() == {"code": "write_failed", "message": f"Cannot write {target}: No such file or directory"}
