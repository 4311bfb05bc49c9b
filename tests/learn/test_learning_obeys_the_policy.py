"""`learn` obeys the index's learning policy: an item needs ``min_askers`` distinct askers, and no asker above
``max_share`` of its evidence, before it changes a ranking; `learned remove --asker` undoes what rests on one
asker's marks (kept, excluded) and leaves the ranking exactly as if they had never marked. The askers here are
SQLite's (:func:`kb_indexer.store.team.on_behalf`); PostgreSQL's login roles: test_postgres_learning_policy.py."""

from __future__ import annotations

import pytest

from kb_indexer.store.team import on_behalf

GOOD = "alphago-architecture.md"
POISON = "sqlite-full-text-search.md"
QUESTIONS = ("how does alphago work", "tree search for board games", "ranking documents by words")


def _mark(kb, asker: str, question: str, helpful: str) -> None:
    with on_behalf(asker):
        qid = kb.query(question)["query_id"]
        kb.learning.feedback(qid, [helpful], [])


def _rankings(kb) -> list[list[tuple[str, float]]]:
    with on_behalf("reader"):
        return [[(r["filepath"], round(r["relevance_score"], 9)) for r in kb.query(q)["results"]] for q in QUESTIONS]


def test_one_asker_alone_teaches_nothing_when_the_policy_asks_for_two(kb):
    kb.learning.set_policy("auto", 2, 1.0)
    before = _rankings(kb)
    _mark(kb, "mallory", "how does alphago work", POISON)
    _mark(kb, "mallory", "how alphago works", POISON)
    out = kb.learning.learn()
    assert out["below_policy"] > 0 and out["applied"] == 0
    assert kb.learning.learned_list()["count"] == 0
    assert _rankings(kb) == before


def test_a_second_asker_makes_the_same_evidence_enough(kb):
    kb.learning.set_policy("auto", 2, 1.0)
    _mark(kb, "alice", "how does alphago work", GOOD)
    assert kb.learning.learn()["applied"] == 0
    _mark(kb, "bob", "how does alphago work", GOOD)
    out = kb.learning.learn()
    assert out["applied"] > 0
    learned = kb.learning.learned_list()["learned"]
    assert any(i["kind"] == "association" and set(i["askers"]) == {"alice", "bob"} for i in learned)


def test_one_askers_share_above_the_cap_holds_the_item_back(kb):
    kb.learning.set_policy("auto", 2, 0.5)
    for q in ("how does alphago work", "how does alphago works", "alphago work how"):
        _mark(kb, "alice", q, GOOD)               # the same terms: one association, three of alice's marks
    _mark(kb, "bob", "how does alphago work", GOOD)
    out = kb.learning.learn()
    held = [s for s in out["suggestions"] if s["kind"] == "association"]
    assert out["below_policy"] >= 1 and not [i for i in kb.learning.learned_list()["learned"]
                                             if i["kind"] == "association"], held


def test_raising_the_bar_withdraws_what_one_asker_taught(kb):
    _mark(kb, "mallory", "how does alphago work", POISON)
    kb.learning.learn()
    assert kb.learning.learned_list()["count"] > 0
    kb.learning.set_policy(None, 2)
    out = kb.learning.learn()
    assert out["suggestions"] and all(s["action"] == "update" for s in out["suggestions"])
    assert all(not i["weight"] for i in kb.learning.learned_list()["learned"])


def test_removing_an_asker_restores_the_rankings_exactly(kb):
    _mark(kb, "alice", "how does alphago work", GOOD)
    _mark(kb, "bob", "tree search for board games", GOOD)
    kb.learning.learn()
    clean = _rankings(kb)
    for q in ("how does alphago work", "how alphago works", "alphago work", "ranking documents by words"):
        _mark(kb, "mallory", q, POISON)
    _mark(kb, "mallory", "tree search for board games", GOOD)   # on a question bob marked too
    kb.learning.learn()
    assert _rankings(kb) != clean
    out = kb.learning.remove_asker("mallory")
    assert out["feedback_excluded"] == 5 and out["withdrawn"] > 0
    assert _rankings(kb) == clean
    rows = kb.conn.execute("SELECT excluded FROM query_feedback WHERE asker = 'mallory'").fetchall()
    assert [r[0] for r in rows] == [1] * 5          # their marks are kept, excluded
    assert kb.learning.learn()["applied"] == 0 and _rankings(kb) == clean   # and stay out of later learns


def test_removing_an_asker_empties_what_waits_for_review_on_their_word(kb):
    kb.learning.set_policy("review")
    _mark(kb, "mallory", "how does alphago work", POISON)
    assert kb.learning.learn()["held_for_review"] > 0
    kb.learning.remove_asker("mallory")
    pending = kb.learning.pending()["learned"]
    assert pending and all(not i["weight"] for i in pending)
    before = _rankings(kb)
    kb.learning.approve([i["id"] for i in pending])
    assert _rankings(kb) == before


def test_removing_an_asker_with_no_marks_changes_nothing(kb):
    _mark(kb, "alice", "how does alphago work", GOOD)
    kb.learning.learn()
    before = _rankings(kb)
    assert kb.learning.remove_asker("nobody") == {"asker": "nobody", "feedback_excluded": 0, "withdrawn": 0,
                                                  "relearned": 0, "changes": []}
    assert _rankings(kb) == before


@pytest.mark.parametrize("args", [("--asker", "x", "1"), ("--asker", "x", "--all")])
def test_remove_asker_goes_alone(kb, run, args):
    out = run("learned", "remove", *args, "--db", str(kb.db_path), "-f", "json")
    assert out.returncode == 2 and out.error()["code"] == "usage", out.stderr


def test_remove_asker_from_the_command_line(kb, run):
    _mark(kb, "mallory", "how does alphago work", POISON)
    kb.learning.learn()
    out = run("learned", "remove", "--asker", "mallory", "--db", str(kb.db_path), "-f", "json")
    assert out.returncode == 0, out.stderr
    assert out.json()["feedback_excluded"] == 1 and out.json()["withdrawn"] >= 1
    table = run("learned", "remove", "--asker", "mallory", "--db", str(kb.db_path))
    assert table.returncode == 0 and "feedback_excluded" in table.stdout


def test_restoring_an_item_written_outside_kbindex_is_refused_and_writes_nothing(kb, run):
    kb.conn.execute("INSERT INTO learned_items (key, kind, detail, feedback_ids, status) "
                    "VALUES ('association:forged', 'association', '{}', '[]', 'removed')")
    kb.conn.commit()
    out = run("learned", "restore", "1", "--db", str(kb.db_path), "-f", "json")
    assert out.returncode == 1 and out.error()["code"] == "invalid_input", out.stderr
    assert "lacks document_id, terms, weight" in out.error()["message"]
    assert kb.conn.execute("SELECT status FROM learned_items").fetchone()[0] == "removed"
