"""An unknown embedding backend named by a settings file (``KBINDEX_EMBED_BACKEND=evil`` in ./.env) or the
environment is handled like an unknown LLM backend: a query runs without vectors and says why in its JSON
(exit 0, not a usage error about an "LLM backend"), `embed` stops with an `llm_config` error naming the
variable (exit 1), and `doctor` lists it as a problem. Given with `--embed-backend`, it stays bad usage."""

from __future__ import annotations

import pytest

from helpers import write_doc


@pytest.fixture
def project(run, tmp_path, dotenv_on):
    write_doc(tmp_path / "kb", "a.md", "# Agents\n\nReinforcement learning trains agents with rewards.\n",
              keywords={"keywords": ["reinforcement learning", "agents"]})
    assert run("init", "--kb", tmp_path / "kb", cwd=tmp_path).returncode == 0
    assert run("sync", cwd=tmp_path).returncode == 0
    (tmp_path / ".env").write_text("KBINDEX_EMBED_BACKEND=evil\n")
    return tmp_path


@pytest.mark.parametrize("method", ["auto", "hybrid", "semantic"])
def test_a_query_runs_without_vectors_and_says_why(run, project, method):
    res = run("query", "how do agents learn", "--method", method, "--format", "json", cwd=project)
    assert res.returncode == 0, res.stderr
    assert "KBINDEX_EMBED_BACKEND" in res.stderr and str(project / ".env") in res.stderr
    out = res.json()
    assert out["semantic"]["used"] is False and "KBINDEX_EMBED_BACKEND='evil'" in out["semantic"]["error"]
    assert out["results"] and out["results"][0]["filepath"] == "a.md"


def test_embed_stops_with_a_config_error_naming_the_variable(run, project):
    res = run("embed", "--format", "json", cwd=project)
    assert res.returncode == 1, res.stderr
    error = res.error()
    assert error["code"] == "llm_config" and "KBINDEX_EMBED_BACKEND='evil'" in error["message"]


def test_doctor_lists_it_as_a_problem(run, project):
    res = run("doctor", "--format", "json", "--llm-backend", "none", cwd=project)
    assert res.returncode != 2, res.stderr
    problems = res.json()["problems"] if res.stdout else res.error()["details"]["problems"]
    assert any("KBINDEX_EMBED_BACKEND" in p and "evil" in p for p in problems), problems


def test_from_the_environment_too(run, project):
    (project / ".env").unlink()
    res = run("query", "how do agents learn", "--format", "json", cwd=project, env={"KBINDEX_EMBED_BACKEND": "evil"})
    assert res.returncode == 0, res.stderr
    assert "the environment" in res.json()["semantic"]["error"]


def test_given_as_a_flag_it_stays_bad_usage(run, project):
    res = run("query", "how do agents learn", "--embed-backend", "evil", "--format", "json", cwd=project)
    assert res.returncode == 2 and res.error()["code"] == "usage"
    assert "Unknown embedding backend 'evil'" in res.error()["message"]
