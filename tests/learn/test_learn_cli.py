"""The learning loop end to end through the installed command: every step a separate process."""

from __future__ import annotations


import pytest
from kb_indexer.api import QueryOptions


@pytest.fixture
def proj(project, run):
    assert run("init", cwd=project).returncode == 0
    assert run("sync", cwd=project).returncode == 0
    return project


def q(run, proj, *args):
    res = run("query", *args, "-f", "json", cwd=proj)
    assert res.returncode == 0, res.stderr
    return res.json()


def test_query_refine_history_feedback_learn_persist_across_processes(proj, run):
    first = q(run, proj, "Which program beat professional Go players?")
    qid = first["query_id"]
    ref = run("refine", str(qid), "--keywords", "alphago", "monte carlo tree search", "-f", "json", cwd=proj).json()
    assert ref["query_id"] == qid and ref["attempt_id"] != first["attempt_id"]
    assert ref["query"]["keywords"] == ["alphago", "monte carlo tree search"]
    last = run("refine", "--last", "-k", "MCTS", "-f", "json", cwd=proj).json()
    assert last["query_id"] == qid
    hist = run("history", str(qid), "-f", "json", cwd=proj).json()
    assert [a["attempt_id"] for a in hist["attempts"]] == [first["attempt_id"], ref["attempt_id"], last["attempt_id"]]
    assert run("history", "-f", "json", cwd=proj).json()["queries"][0]["attempts"] == 3

    res = run("feedback", str(qid), "--helpful", "alphago-architecture.md", "--not-helpful",
              "supervised-learning-basics.md", "--notes", "good one", "-f", "json", cwd=proj)
    assert res.returncode == 0, res.stderr
    shown = run("feedback", str(qid), "--show", "-f", "json", cwd=proj).json()
    assert {(f["filepath"], f["helpful"], f["processed"]) for f in shown["feedback"]} == {
        ("alphago-architecture.md", True, False), ("supervised-learning-basics.md", False, False)}

    dry = run("learn", "--dry-run", "-f", "json", cwd=proj).json()
    assert dry["dry_run"] and dry["applied"] == 0 and dry["suggestions"]
    assert run("learned", "list", "-f", "json", cwd=proj).json()["count"] == 0
    done = run("learn", "-f", "json", cwd=proj).json()
    assert done["applied"] == len(dry["suggestions"]) and done["marked_processed"] == 2
    text = run("learn", cwd=proj)
    assert "Analyzing 0 unprocessed feedback entries from 0 queries" in text.stdout
    learned = run("learned", "list", "-f", "json", cwd=proj).json()
    assert learned["count"] == len(dry["suggestions"])
    assert all(item["feedback_ids"] for item in learned["learned"])
    table = run("learned", "list", cwd=proj, env={"COLUMNS": "200"}).stdout   # the table gives the reasons too
    assert "reason" in table and learned["learned"][0]["reason"][:30] in table
    assert run("feedback", str(qid), "--show", "-f", "json", cwd=proj).json()["feedback"][0]["processed"] is True

    removed = run("learned", "remove", "--all", "-f", "json", cwd=proj).json()
    assert removed["count"] == learned["count"]
    assert run("learned", "list", "-f", "json", cwd=proj).json()["count"] == 0


def test_helpful_feedback_lifts_the_document_when_the_question_is_asked_again(proj, run):
    question = "how do agents improve by acting and observing rewards"
    other = "python virtual environments and pip"
    other_before = q(run, proj, other)["results"]
    assert other_before
    before = q(run, proj, question, "--limit", "17")
    paths = [r["filepath"] for r in before["results"]]
    target = "trial-and-error-learning.md"
    assert target in paths
    rank_before = paths.index(target)
    assert rank_before > 0, "pick a document that is not already first"
    noise = [p for p in paths[:3] if p != target][:1]
    run("feedback", str(before["query_id"]), "--helpful", target, *sum((["--not-helpful", n] for n in noise), []),
        cwd=proj)
    run("learn", cwd=proj)
    after = q(run, proj, question, "--limit", "17")
    paths_after = [r["filepath"] for r in after["results"]]
    assert paths_after.index(target) < rank_before
    assert "learned" in after["results"][paths_after.index(target)]["sources"]
    for n in noise:
        assert paths_after.index(n) > paths.index(n)
    # An unrelated question is not affected: the same results as before learning.
    assert q(run, proj, other)["results"] == other_before


def test_feedback_errors(proj, run):
    qid = q(run, proj, "alphago")["query_id"]
    res = run("feedback", str(qid), "--helpful", "no-such-doc.md", "-f", "json", cwd=proj)
    assert res.returncode == 1 and "Not in the index" in res.error()["message"]
    res = run("feedback", "999", "--helpful", "alphago-architecture.md", "-f", "json", cwd=proj)
    assert res.returncode == 1 and res.error()["code"] == "not_found"
    res = run("feedback", str(qid), "-f", "json", cwd=proj)
    assert res.returncode == 2
    res = run("feedback", str(qid), "--interactive", "-f", "json", cwd=proj)
    assert res.returncode == 2 and "terminal" in res.error()["message"]
    assert run("feedback", str(qid), "--show", "-f", "json", cwd=proj).json()["count"] == 0


def test_clear_history_before_date(proj, run):
    q(run, proj, "alphago")
    res = run("clear-history", "--before", "2000-01-01", "-f", "json", cwd=proj).json()
    assert res["queries_removed"] == 0
    bare = run("clear-history", "-f", "json", cwd=proj)    # nothing deleted without --before or --all
    assert bare.returncode == 2 and bare.error()["code"] == "usage" and "--all" in bare.error()["message"]
    res = run("clear-history", "--all", "-f", "json", cwd=proj).json()
    assert res["queries_removed"] == 1
    assert run("clear-history", "--before", "yesterday", cwd=proj).returncode == 2


def test_interactive_feedback_reviews_the_last_attempt(kb, monkeypatch):
    from kb_indexer.cli import learn as learn_cli

    out = kb.query("how do agents learn from rewards", options=QueryOptions(limit=3))
    paths = [r["filepath"] for r in out["results"]]
    answers = iter(["y", "n", "s"])
    monkeypatch.setattr(learn_cli.typer, "prompt", lambda *a, **k: next(answers))
    good, bad = learn_cli._interactive(kb, out["query_id"])
    assert good == [paths[0]] and bad == [paths[1]]


def test_clear_history_before_honours_a_utc_offset(proj, run):
    from datetime import datetime, timedelta, timezone

    q(run, proj, "alphago")
    # One hour ago in UTC, written as local time at +02:00: the query is newer, so nothing goes.
    hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).astimezone(timezone(timedelta(hours=2)))
    res = run("clear-history", "--before", hour_ago.isoformat(timespec="seconds"), "-f", "json", cwd=proj).json()
    assert res["queries_removed"] == 0


def test_learned_list_rejects_an_unknown_kind(proj, run):
    res = run("learned", "list", "--kind", "bogus", "-f", "json", cwd=proj)
    assert res.returncode == 2 and res.stdout == "" and "association" in res.error()["message"]
