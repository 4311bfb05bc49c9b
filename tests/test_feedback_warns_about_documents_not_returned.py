"""`kbindex feedback` on a document the query never returned records it, and says so on stderr in every
format (the JSON also lists it in ``not_in_results``); a returned document gets no warning."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def asked(project, run):
    assert run("init", cwd=project).returncode == 0
    assert run("sync", cwd=project).returncode == 0
    res = run("query", "How do agents learn from trial and error?", "--format", "json", cwd=project)
    assert res.returncode == 0, res.stderr
    returned = [r["filepath"] for r in res.json()["results"]]
    assert "alphago-architecture.md" not in returned and "experience-based-learning.md" in returned
    return project


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_document_never_returned_is_recorded_with_a_warning(asked, run, fmt):
    res = run("feedback", "1", "--helpful", "alphago-architecture.md", "--format", fmt, cwd=asked)
    assert res.returncode == 0, res.stderr
    assert "query 1 never returned alphago-architecture.md" in res.stderr
    if fmt == "json":
        out = res.json()
        assert out["not_in_results"] == ["alphago-architecture.md"]
        assert [r["filepath"] for r in out["recorded"]] == ["alphago-architecture.md"]
    shown = json.loads(run("feedback", "1", "--show", "--format", "json", cwd=asked).stdout)
    assert [f["filepath"] for f in shown["feedback"]] == ["alphago-architecture.md"]


def test_a_returned_document_gets_no_warning(asked, run):
    res = run("feedback", "1", "--helpful", "experience-based-learning.md", "--format", "json", cwd=asked)
    assert res.returncode == 0 and "never returned" not in res.stderr
    assert "not_in_results" not in res.json()


def test_the_in_process_cli_warns_too(asked, cli, monkeypatch):
    monkeypatch.chdir(asked)
    res = cli("feedback", "1", "--helpful", "alphago-architecture.md", "--not-helpful",
              "experience-based-learning.md", "--format", "json")
    assert res.exit_code == 0, res.output
    assert "never returned alphago-architecture.md" in res.stderr
    assert "experience-based-learning.md" not in res.stderr.split("never returned", 1)[1]
