"""Who asked and who may do what, on real PostgreSQL roles granted as docs/teams.md ("Who asked, and who may do
what") says: an owner, two members, a curator and a reader. The asker recorded is the login role (KBINDEX_USER
cannot forge it); marks are kept per asker; a member's clear-history deletes only its own rows, and the server
refuses its direct SQL on other members' rows; `clear-history --all` is the curator's or the owner's; a reader's
writes are read_only."""

from __future__ import annotations

import pytest

from tests.helpers import team_of

pytest.importorskip("psycopg")

@pytest.fixture
def team(pg_url, project, run):
    return team_of(pg_url, project, run, readers=("reader",))


def _name(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0]


def _ask(run, url, question="how does alphago work", **kw):
    out = run("query", question, "--db", url, "-f", "json", **kw)
    assert out.returncode == 0, out.stderr
    return out.json()["query_id"]


def _mark(run, url, qid, flag="--helpful", path="alphago-architecture.md"):
    out = run("feedback", str(qid), flag, path, "--db", url, "-f", "json")
    assert out.returncode == 0, out.stderr


def test_the_asker_is_the_login_role_and_kbindex_user_cannot_forge_it(team, run):
    alice = team["alice"]
    qid = _ask(run, alice, env={"KBINDEX_USER": "bob"})
    _mark(run, alice, qid)
    detail = run("history", str(qid), "--db", team["owner"], "-f", "json").json()
    assert detail["asker"] == _name(alice) and [f["asker"] for f in detail["feedback"]] == [_name(alice)]
    assert [a["asker"] for a in detail["attempts"]] == [_name(alice)]


def test_marks_are_kept_per_asker_on_the_server(team, run):
    qid = _ask(run, team["alice"])
    _mark(run, team["alice"], qid, "--helpful")
    _mark(run, team["bob"], qid, "--not-helpful")
    _mark(run, team["alice"], qid, "--helpful")
    marks = run("history", str(qid), "--db", team["owner"], "-f", "json").json()["feedback"]
    assert sorted((f["asker"], f["helpful"]) for f in marks) == sorted(
        [(_name(team["alice"]), True), (_name(team["bob"]), False)])


def test_feedback_last_is_the_members_own_last_question(team, run):
    mine = _ask(run, team["alice"])
    _ask(run, team["bob"], "what is reward shaping")
    out = run("feedback", "--last", "--helpful", "alphago-architecture.md", "--db", team["alice"], "-f", "json")
    assert out.returncode == 0 and out.json()["query_id"] == mine, out.stderr


def test_a_member_clears_only_its_own_history_and_cannot_clear_everyones(team, run):
    shared = _ask(run, team["alice"])
    _ask(run, team["bob"])                       # the same question: bob's attempt on alice's query
    _mark(run, team["alice"], shared)
    _mark(run, team["bob"], shared, "--not-helpful")
    bobs = _ask(run, team["bob"], "what is reward shaping")
    everyone = run("clear-history", "--all", "--db", team["bob"], "-f", "json")
    assert everyone.returncode == 1 and everyone.error()["code"] == "not_allowed", everyone.stderr
    assert "clear-history --all needs the curator role" in everyone.error()["message"]
    own = run("clear-history", "--before", "2999-01-01", "--db", team["bob"], "-f", "json")
    assert own.returncode == 0, own.stderr
    assert own.json()["queries_removed"] == 1 and own.json()["feedback_removed"] == 1
    left = run("history", "--db", team["owner"], "-f", "json").json()["queries"]
    assert [q["query_id"] for q in left] == [shared] and bobs not in [q["query_id"] for q in left]
    detail = run("history", str(shared), "--db", team["owner"], "-f", "json").json()
    assert {a["asker"] for a in detail["attempts"]} == {_name(team["alice"])}
    assert [f["asker"] for f in detail["feedback"]] == [_name(team["alice"])]


def test_the_server_refuses_a_members_direct_sql_on_others_rows(team, run):
    import psycopg

    qid = _ask(run, team["alice"])
    _mark(run, team["alice"], qid)
    with psycopg.connect(team["bob"], autocommit=True) as bob:
        assert bob.execute("SELECT COUNT(*) FROM query_feedback").fetchone()[0] == 1   # everyone reads all
        assert bob.execute("DELETE FROM query_feedback").rowcount == 0
        assert bob.execute("DELETE FROM query_attempts").rowcount == 0
        assert bob.execute("DELETE FROM queries").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            bob.execute("UPDATE query_feedback SET helpful = 0")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):   # it cannot write another's name
            bob.execute(f"INSERT INTO query_feedback (query_id, filepath, helpful, asker) "
                        f"VALUES ({qid}, 'x.md', 1, '{_name(team['alice'])}')")
        bob.execute("UPDATE query_feedback SET processed = 1")    # what its learn does to everyone's rows
    detail = run("history", str(qid), "--db", team["owner"], "-f", "json").json()
    assert [(f["asker"], f["helpful"]) for f in detail["feedback"]] == [(_name(team["alice"]), True)]


def test_a_curator_and_the_owner_clear_everyones_history(team, run):
    for who in ("alice", "bob"):
        _mark(run, team[who], _ask(run, team[who], f"question of {who}"))
    cleared = run("clear-history", "--all", "--db", team["carol"], "-f", "json")
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.json()["queries_removed"] == 2 and cleared.json()["feedback_removed"] == 2
    _ask(run, team["alice"])
    assert run("clear-history", "--all", "--db", team["owner"], "-f", "json").json()["queries_removed"] == 1


def test_team_wide_commands_need_the_curator_and_a_reader_is_read_only(team, run):
    removed = run("learned", "remove", "--all", "--db", team["alice"], "-f", "json")
    assert removed.returncode == 1 and removed.error()["code"] == "not_allowed", removed.stderr
    assert run("learned", "remove", "--all", "--db", team["carol"], "-f", "json").returncode == 0
    forced = run("sync", "--force", "--db", team["bob"], "-f", "json")
    assert forced.returncode == 1 and forced.error()["code"] == "not_allowed", forced.stderr
    reader = run("clear-history", "--all", "--db", team["reader"], "-f", "json")
    assert reader.returncode == 1 and reader.error()["code"] == "read_only", reader.stderr


def test_roles_as_kbindex_sees_them(team):
    from kb_indexer.config import DbUrl
    from kb_indexer.store.connection import connect
    from kb_indexer.store.team import current_asker, role

    seen = {}
    for who, url in team.items():
        conn = connect(DbUrl(url))
        try:
            seen[who] = role(conn)
            if who != "owner":
                assert current_asker(conn) == _name(url)
        finally:
            conn.close()
    assert seen == {"alice": "member", "bob": "member", "carol": "curator", "reader": "reader", "owner": "owner"}
