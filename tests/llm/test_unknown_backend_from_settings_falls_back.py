"""An unknown LLM backend named by a settings file (``KBINDEX_LLM_BACKEND=evil`` in ./.env) or the environment
is reported (a warning naming the variable and where it came from; a problem in `doctor`'s report) and the
LLM features fall back as with no backend, saying so in the JSON. Given with `--llm-backend`, an unknown
backend stays bad usage (exit 2)."""

from __future__ import annotations

import pytest

from helpers import write_doc


@pytest.fixture
def project(run, tmp_path, dotenv_on):
    write_doc(tmp_path / "kb", "a.md", "# Agents\n\nReinforcement learning trains agents with rewards.\n",
              keywords={"keywords": ["reinforcement learning", "agents"]})
    assert run("init", "--kb", tmp_path / "kb", cwd=tmp_path).returncode == 0
    assert run("sync", cwd=tmp_path).returncode == 0
    assert run("relate", "reinforcement learning", "agents", "--type", "related_concept", "--context",
               "training game agents", cwd=tmp_path).returncode == 0
    (tmp_path / ".env").write_text("KBINDEX_LLM_BACKEND=evil\n")
    return tmp_path


def _warned(res, where: str) -> None:
    assert "KBINDEX_LLM_BACKEND" in res.stderr and "evil" in res.stderr and where in res.stderr, res.stderr


def test_doctor_lists_the_unknown_backend_as_a_problem(run, project):
    res = run("doctor", "--format", "json", cwd=project)
    assert res.returncode != 2, res.stderr
    problems = res.json()["problems"] if res.stdout else res.error()["details"]["problems"]
    problem = next(p for p in problems if "KBINDEX_LLM_BACKEND" in p)
    assert "evil" in problem and str(project / ".env") in problem


@pytest.mark.parametrize("args", [
    ("query", "how do agents learn", "--context", "training game agents"),
    ("similar", "reinforcement learning", "--user-context", "training game agents"),
    ("context", "build", "-s", "s1", "how do agents learn"),
])
def test_llm_features_fall_back_and_say_why(run, project, args):
    res = run(*args, "--format", "json", cwd=project)
    assert res.returncode == 0, res.stderr
    _warned(res, str(project / ".env"))
    out = res.json()
    if "llm" in out and isinstance(out["llm"], dict):
        assert out["llm"]["used"] is False and out["llm"]["fallback"] == "lexical"
        assert "KBINDEX_LLM_BACKEND" in (out["llm"].get("reason") or out["llm"].get("error") or "")


def test_from_the_environment_too(run, project):
    (project / ".env").unlink()
    res = run("query", "how do agents learn", "--context", "training game agents", "--format", "json",
              cwd=project, env={"KBINDEX_LLM_BACKEND": "evil"})
    assert res.returncode == 0, res.stderr
    _warned(res, "the environment")
    assert "the environment" in res.json()["llm"]["reason"]


def test_an_unknown_backend_given_as_a_flag_stays_bad_usage(run, project):
    res = run("query", "how do agents learn", "--context", "games", "--llm-backend", "evil", "--format", "json",
              cwd=project)
    assert res.returncode == 2 and res.error()["code"] == "usage"
