"""The learning policy on real PostgreSQL roles (granted as docs/teams.md says): under the default policy one
member alone teaches nothing, however many names it records on its own behalf; two members do; a curator's word
is enough alone; only a curator undoes one asker (`learned remove --asker`), and that restores the rankings."""

from __future__ import annotations

import pytest

from tests.helpers import team_of
from tests.store.test_postgres_team_roles import _name

pytest.importorskip("psycopg")

POISON = "sqlite-full-text-search.md"
QUESTIONS = ("how does alphago work", "how alphago works")


@pytest.fixture
def team(pg_url, project, run):
    return team_of(pg_url, project, run)


def _mark(url: str, behalf: str | None = None, note: str = POISON) -> None:
    """A member marks; with ``behalf``, under a name it sets on its own session (as any member may, in psql)."""
    from kb_indexer.api import KnowledgeBase

    with KnowledgeBase.open(url) as kb:
        if behalf:
            kb.conn.execute("SELECT set_config('kbindex.on_behalf', ?, false)", (behalf,))
        for q in QUESTIONS:
            kb.learning.feedback(kb.query(q)["query_id"], [note], [])


def _top3(run, url) -> list[list[str]]:
    out = []
    for q in QUESTIONS:
        res = run("query", q, "--db", url, "-f", "json")
        assert res.returncode == 0, res.stderr
        out.append([r["filepath"] for r in res.json()["results"][:3]])
    return out


def _learn(run, url) -> dict:
    out = run("learn", "--db", url, "-f", "json")
    assert out.returncode == 0, out.stderr
    return out.json()


def test_one_member_under_many_names_teaches_nothing(team, run):
    before = _top3(run, team["owner"])
    for name in ("ann", "ben", "cid"):
        _mark(team["alice"], behalf=name)
    out = _learn(run, team["alice"])
    assert out["applied"] == 0 and out["below_policy"] > 0
    assert _top3(run, team["owner"]) == before and POISON not in before[0]
    import psycopg
    with psycopg.connect(team["owner"]) as conn:
        askers = {r[0] for r in conn.execute("SELECT asker FROM query_feedback")}
    assert askers == {f"{_name(team['alice'])}/{n}" for n in ("ann", "ben", "cid")}   # three names, one role


def test_two_members_agreeing_teach_it(team, run):
    _mark(team["alice"])
    _mark(team["bob"])
    assert _learn(run, team["alice"])["applied"] > 0
    assert all(POISON in top for top in _top3(run, team["owner"]))


def test_a_curators_word_is_enough_alone(team, run):
    _mark(team["carol"])
    assert _learn(run, team["alice"])["applied"] > 0


def test_only_a_curator_undoes_an_asker_and_that_restores_the_ranking(team, run):
    before = _top3(run, team["owner"])
    _mark(team["alice"])
    _mark(team["bob"])
    _learn(run, team["owner"])
    assert _top3(run, team["owner"]) != before
    member = run("learned", "remove", "--asker", _name(team["alice"]), "--db", team["bob"], "-f", "json")
    assert member.returncode == 1 and member.error()["code"] == "not_allowed", member.stderr
    out = run("learned", "remove", "--asker", _name(team["alice"]), "--db", team["carol"], "-f", "json")
    assert out.returncode == 0, out.stderr
    assert out.json()["feedback_excluded"] == 2 and out.json()["withdrawn"] > 0
    assert _top3(run, team["owner"]) == before    # bob alone is below the policy now


def _expanded(run, url) -> set[str]:
    """The keywords a query naming alphago is expanded to (its relations)."""
    res = run("similar", "alphago", "--db", url, "-f", "json")
    assert res.returncode == 0, res.stderr
    return {s["keyword"] for s in res.json()["similar_keywords"]}


def test_under_review_a_members_relate_waits_for_a_curator(team, run):
    assert run("learned", "policy", "--set", "review", "--db", team["owner"]).returncode == 0
    before = _expanded(run, team["owner"])
    out = run("relate", "alphago", "full-text search", "-t", "synonym", "-c", "steer", "-s", "1.0",
              "--db", team["alice"], "-f", "json")
    assert out.returncode == 0, out.stderr
    assert out.json()["action"] == "held_for_review" and "held for review" in out.stderr
    lid = out.json()["learned_id"]
    assert _expanded(run, team["owner"]) == before            # nothing pending changes an expansion
    pending = run("learned", "list", "--pending", "--db", team["owner"], "-f", "json").json()["learned"]
    assert [(i["id"], i["summary"]) for i in pending] == [(lid, 'relates "alphago" and "full-text search" (synonym)')]
    refused = run("learned", "approve", str(lid), "--db", team["bob"], "-f", "json")
    assert refused.returncode == 1 and refused.error()["code"] == "not_allowed"
    assert run("learned", "approve", str(lid), "--db", team["carol"], "-f", "json").returncode == 0
    assert "full-text search" in _expanded(run, team["owner"])
    # a curator's own relate and unrelate apply at once
    gone = run("unrelate", "alphago", "full-text search", "--db", team["carol"], "-f", "json").json()
    assert gone["action"] == "removed" and gone["removed"] == 1


def test_under_review_a_members_unrelate_waits_too(team, run):
    made = run("relate", "alphago", "go engine", "-t", "synonym", "-c", "x", "--db", team["carol"], "-f", "json")
    assert made.returncode == 0 and made.json()["action"] == "created", made.stderr
    assert run("learned", "policy", "--set", "review", "--db", team["owner"]).returncode == 0
    held = run("unrelate", "alphago", "go engine", "--db", team["alice"], "-f", "json").json()
    assert held["action"] == "held_for_review" and held["removed"] == 0
    assert "go engine" in _expanded(run, team["owner"])
    assert run("learned", "reject", str(held["learned_id"]), "--db", team["carol"]).returncode == 0
    assert "go engine" in _expanded(run, team["owner"])


def test_a_lone_members_mark_on_a_document_never_returned_waits_for_review(team, run):
    assert run("learned", "policy", "--set", "auto", "--min-askers", "1", "--db", team["owner"]).returncode == 0
    question = "what is reward shaping"
    first = run("query", question, "--db", team["alice"], "-f", "json").json()
    assert POISON not in [r["filepath"] for r in first["results"]]
    assert run("feedback", str(first["query_id"]), "--helpful", POISON, "--db", team["alice"]).returncode == 0
    returned = first["results"][0]["filepath"]
    assert run("feedback", str(first["query_id"]), "--helpful", returned, "--db", team["alice"]).returncode == 0
    out = _learn(run, team["alice"])
    held = [s for s in out["suggestions"] if s["action"] == "hold"]
    assert out["held_for_review"] == len(held) >= 1 and all(s["filepath"] == POISON for s in held
                                                            if s["kind"] == "association")
    assert out["applied"] >= 1                     # the mark on what the question returned applies at once
    top = run("query", question, "--db", team["owner"], "-f", "json").json()["results"]
    assert POISON not in [r["filepath"] for r in top[:3]]
    # a second member's mark on it is the support it lacked
    assert run("feedback", str(first["query_id"]), "--helpful", POISON, "--db", team["bob"]).returncode == 0
    assert _learn(run, team["bob"])["applied"] >= 1
    assert not run("learned", "list", "--pending", "--db", team["owner"], "-f", "json").json()["count"]
