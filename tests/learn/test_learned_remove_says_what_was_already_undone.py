"""`learned remove` of an item an earlier remove undid says so (`already_removed`, a warning on stderr)
instead of an empty result, and an id given twice is undone and counted once."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.both_engines


def _learned(kb) -> list[int]:
    qid = kb.query("tree search for board games")["query_id"]
    kb.learning.feedback(qid, ["alphago-architecture.md"], ["supervised-learning-basics.md"])
    kb.learning.learn()
    ids = [i["id"] for i in kb.learning.learned_list()["learned"]]
    assert len(ids) >= 2
    return ids


def test_an_id_given_twice_is_undone_once(kb):
    first, *_ = _learned(kb)
    out = kb.learning.learned_remove([first, first])
    assert out == {"removed": [first], "count": 1, "already_removed": []}


def test_removing_again_names_what_was_already_undone(kb):
    first, second, *_ = _learned(kb)
    kb.learning.learned_remove([first])
    out = kb.learning.learned_remove([first, second])
    assert out == {"removed": [second], "count": 1, "already_removed": [first]}


def test_the_command_line_warns(kb, run):
    first, *_ = _learned(kb)
    kb.learning.learned_remove([first])
    res = run("learned", "remove", str(first), "--db", kb.db_path, "-f", "json")
    assert res.returncode == 0 and res.json()["already_removed"] == [first]
    assert f"already removed, nothing to undo: {first}" in res.stderr
