"""What a member may not do with its own SQL either, on real roles granted as docs/teams.md says (the member grants
allow writes on every table): record its marks under another name, bring back marks a curator excluded, rewrite
another member's question, change the learning policy, approve, remove or restore learned items, or rewrite the
schema's record. Its commands: `learned remove ID` and `restore` are a curator's; under PostgreSQL's default
policy its `relate` waits for review."""

from __future__ import annotations

import pytest

from tests.helpers import login_role, team_of
from tests.store.test_postgres_team_roles import _name

psycopg = pytest.importorskip("psycopg")

POISON = "sqlite-full-text-search.md"


@pytest.fixture
def team(pg_url, project, run):
    return team_of(pg_url, project, run, members=("alice", "mallory"))


def _marked(run, url, question="how does alphago work", path=POISON) -> int:
    qid = run("query", question, "--db", url, "-f", "json").json()["query_id"]
    assert run("feedback", str(qid), "--helpful", path, "--db", url).returncode == 0
    return qid


def _refused(url: str, sql: str, args: tuple = ()) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(sql, args)


def test_a_member_cannot_record_its_marks_under_another_name(team, run):
    _marked(run, team["mallory"])
    for name in ("postgres", "unknown", _name(team["alice"])):
        _refused(team["mallory"], "UPDATE query_feedback SET asker = %s", (name,))
        _refused(team["mallory"], "UPDATE queries SET asker = %s", (name,))
        _refused(team["mallory"], "UPDATE query_attempts SET asker = %s", (name,))


def test_a_member_cannot_bring_back_marks_a_curator_excluded(team, run):
    _marked(run, team["mallory"])
    out = run("learned", "remove", "--asker", _name(team["mallory"]), "--db", team["carol"], "-f", "json")
    assert out.returncode == 0 and out.json()["feedback_excluded"] == 1, out.stderr
    _refused(team["mallory"], "UPDATE query_feedback SET excluded = 0")
    _marked(run, team["alice"], path="alphago-architecture.md")
    _refused(team["alice"], "UPDATE query_feedback SET excluded = 1 WHERE excluded = 0")   # nor exclude any


def test_a_member_cannot_rewrite_another_members_question(team, run):
    qid = _marked(run, team["alice"], path="alphago-architecture.md")
    _refused(team["mallory"], "UPDATE queries SET question = 'how does sqlite full text search work' WHERE id = %s",
             (qid,))
    with psycopg.connect(team["alice"], autocommit=True) as conn:   # its own, it may
        conn.execute("UPDATE queries SET context = 'mine' WHERE id = %s", (qid,))


def test_a_member_cannot_change_the_policy_or_the_schemas_record(team, run):
    _refused(team["mallory"], "INSERT INTO team_settings (key, value) VALUES ('min_askers', '1')")
    _refused(team["carol"], "INSERT INTO team_settings (key, value) VALUES ('mode', 'auto')")   # the owner's
    _refused(team["mallory"], "DELETE FROM _migrations")
    assert run("learned", "policy", "--set", "review", "--db", team["owner"]).returncode == 0
    _refused(team["mallory"], "UPDATE team_settings SET value = 'auto' WHERE key = 'mode'")
    assert run("query", "alphago", "--db", team["alice"], "-f", "json").returncode == 0


def test_a_member_cannot_decide_on_learned_items(team, run):
    assert run("learned", "policy", "--set", "review", "--min-askers", "1", "--db", team["owner"]).returncode == 0
    _marked(run, team["mallory"], path="alphago-architecture.md")
    assert run("learn", "--db", team["mallory"], "-f", "json").json()["held_for_review"] > 0
    _refused(team["mallory"], "UPDATE learned_items SET decided_by = 'carol'")
    _refused(team["mallory"], "UPDATE learned_items SET status = 'rejected'")
    assert run("learned", "approve", "1", "--db", team["carol"]).returncode == 0
    _refused(team["mallory"], "UPDATE learned_items SET status = 'removed', removed_by = 'x'")
    for args in (("remove", "1"), ("restore", "1")):
        out = run("learned", *args, "--db", team["mallory"], "-f", "json")
        assert out.returncode == 1 and out.error()["code"] == "not_allowed", out.stderr
    assert run("learned", "remove", "1", "--db", team["carol"], "-f", "json").returncode == 0
    _refused(team["mallory"], "UPDATE learned_items SET status = 'active' WHERE id = 1")


def test_under_the_default_policy_a_members_relate_waits_for_review(team, run):
    out = run("relate", "alphago", "sqlite", "-t", "synonym", "-c", "go", "-s", "1", "--db", team["mallory"],
              "-f", "json")
    assert out.returncode == 0 and out.json()["action"] == "held_for_review", out.stderr
    similar = run("similar", "alphago", "--db", team["owner"], "-f", "json").json()["similar_keywords"]
    assert "sqlite" not in {s["keyword"] for s in similar}
    mine = run("relate", "alphago", "go engine", "-t", "synonym", "-c", "x", "--db", team["carol"], "-f", "json")
    assert mine.json()["action"] == "created"


HISTORY_ONLY = ["GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
                "GRANT INSERT, UPDATE, DELETE ON queries, query_attempts, query_feedback TO {role}",
                "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}"]


def test_a_member_granted_only_the_history_asks_and_marks_and_a_curator_learns(team, run, pg_url):
    asker = login_role(pg_url, list(HISTORY_ONLY), "agent")
    assert run("learned", "policy", "--min-askers", "1", "--db", team["owner"]).returncode == 0
    qid = _marked(run, asker, path="alphago-architecture.md")
    out = run("refine", str(qid), "-k", "alphago", "--db", asker, "-f", "json")
    assert out.returncode == 0, out.stderr
    history = run("history", "--db", asker, "-f", "json")
    assert history.returncode == 0 and history.json()["queries"], history.stderr
    _refused(asker, "INSERT INTO learned_items (key, kind, detail, feedback_ids) VALUES ('x', 'keyword', '{}', '[]')")
    learn = run("learn", "--db", asker, "-f", "json")
    assert learn.returncode == 1 and learn.error()["code"] == "read_only", learn.stderr
    assert run("learn", "--db", team["carol"], "-f", "json").json()["applied"] > 0
