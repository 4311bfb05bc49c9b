"""A team member's role (granted as docs/teams.md, Roles, says: rows, not the schema or the sequences) that runs
`import --force` is told `not_allowed`, that an import is the curator's or the owner's, and nothing is written
(before the roles, it was `read_only` from the server; before that it failed as
`internal` ("permission denied for sequence documents_id_seq ... a bug in kbindex") after deleting and
inserting every row). A permission failure of any statement kbindex runs in PostgreSQL's own dialect is
`read_only` as well, not `internal` (a misuse of psycopg, which the server never saw, is still a bug)."""

from __future__ import annotations

import json
import pytest

from tests.helpers import login_role

pytest.importorskip("psycopg")

MEMBER_GRANTS = ["GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
                 "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}"]


def _member(pg_url: str) -> str:
    """A new login role with a member's grants (docs/teams.md, Roles); the URL that connects as it."""
    return login_role(pg_url, list(MEMBER_GRANTS), "member")


@pytest.fixture
def team_index(pg_url, project, run):
    assert run("init", "--db", pg_url, "--kb", project / "knowledge-base").returncode == 0
    assert run("sync", "--db", pg_url).returncode == 0
    qid = run("query", "reward shaping", "--db", pg_url, "-f", "json", cwd=project).json()["query_id"]
    assert run("feedback", str(qid), "--helpful", "reward-shaping.md", "--db", pg_url).returncode == 0
    return pg_url


def _tables(run, db: str, out) -> dict:
    assert run("export", "--db", db, "--output", out).returncode == 0
    return json.loads(out.read_text(encoding="utf-8"))["tables"]


def test_a_members_import_is_not_allowed_and_writes_nothing(team_index, run, tmp_path):
    before = _tables(run, team_index, tmp_path / "before.json")
    member = _member(team_index)
    imported = run("import", tmp_path / "before.json", "--force", "--db", member, "-f", "json")
    assert imported.returncode == 1, imported.stderr
    error = imported.error()
    assert error["code"] == "not_allowed", error   # an import replaces everyone's rows: the curator's or the owner's
    assert "import needs the curator role" in error["message"] and "Nothing was changed" in error["message"]
    assert _tables(run, team_index, tmp_path / "after.json") == before
    # the member's own writes still work (`--last`: the member's own last question)
    assert run("query", "reward shaping", "--db", member, "-f", "json").returncode == 0
    assert run("feedback", "--last", "--not-helpful", "reward-shaping.md", "--db", member).returncode == 0


def test_a_refused_statement_in_postgres_own_dialect_is_read_only(team_index):
    import psycopg

    from kb_indexer.store.errors import translate

    with psycopg.connect(_member(team_index), autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("SELECT setval(pg_get_serial_sequence('documents', 'id'), 1000)")
    mapped = translate(refused.value, "the team's index")
    assert mapped is not None and mapped.code == "read_only", refused.value
    assert "(docs/teams.md, Roles)" in mapped.message
    assert translate(psycopg.ProgrammingError("the query has 2 placeholders but 1 parameters were passed")) is None
