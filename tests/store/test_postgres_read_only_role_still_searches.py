"""A team member's PostgreSQL role that may read the index but not write it (GRANT SELECT) searches and queries
as a read-only SQLite index does (the query answers, its history row lost, `history_error_code: read_only`),
and its writes fail as `read_only`, not `internal`. An index that needs a schema upgrade this role may not make
says who can make it."""

from __future__ import annotations

import pytest

from tests.helpers import login_role


def _as_role(pg_url: str, grants: list[str]) -> str:
    return login_role(pg_url, grants, "reader")


@pytest.fixture
def team_index(pg_url, project, run):
    assert run("init", "--db", pg_url, "--kb", project / "knowledge-base").returncode == 0
    assert run("sync", "--db", pg_url).returncode == 0
    return pg_url


def test_a_select_only_role_queries_and_its_writes_are_read_only(team_index, run, project):
    reader = _as_role(team_index, ["GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"])
    query = run("query", "reward shaping", "--db", reader, "--format", "json", cwd=project)
    assert query.returncode == 0, query.stderr
    out = query.json()
    assert out["results"] and out["query_id"] is None and out["history_error_code"] == "read_only"
    qid = run("query", "reward shaping", "--db", team_index, "--format", "json", cwd=project).json()["query_id"]
    feedback = run("feedback", str(qid), "--helpful", "reward-shaping.md", "--db", reader, "--format", "json", cwd=project)
    assert feedback.returncode == 1 and feedback.error()["code"] == "read_only", feedback.stderr
    assert "not allowed" in feedback.error()["message"] and "INSERT, UPDATE and DELETE" in feedback.error()["message"]


def test_an_upgrade_the_role_may_not_make_names_who_can(team_index, run, project):
    import psycopg

    with psycopg.connect(team_index, autocommit=True) as conn:   # as if written by the kbindex before the last migration
        conn.execute("DELETE FROM _migrations WHERE rowid = (SELECT max(rowid) FROM _migrations)")
    member = _as_role(team_index, ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"])
    search = run("search", "RL", "--db", member, "--format", "json", cwd=project)
    assert search.returncode == 1 and search.error()["code"] == "read_only", search.stderr
    assert "Run `kbindex init` once as the role that owns the index" in search.error()["message"]


def test_a_select_only_role_reads_the_report(team_index, run, project):
    run("query", "zzqx nowhere", "-k", "zzqx", "--db", team_index, "--format", "json", cwd=project)
    reader = _as_role(team_index, ["GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"])
    report = run("report", "--db", reader, "--format", "json", cwd=project)
    assert report.returncode == 0, report.stderr
    assert report.json() == run("report", "--db", team_index, "--format", "json", cwd=project).json()
    assert report.json()["most_asked"]["count"] == 1
