"""`learned list` says what each item does in a person's words: the document and the question as it was asked
("exploration bonus formula"), not the internal key (`association:3:…`) or the stemmed terms the matching uses
("bonu"); the JSON keeps the key and the details, and adds `summary` and `questions`."""

from __future__ import annotations

import pytest

from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines

QUESTION = "exploration bonus formula in bandits"


def _learned(kb):
    out = kb.query(QUESTION, options=QueryOptions(limit=3))
    path = out["results"][0]["filepath"]
    kb.learning.feedback(out["query_id"], [path], [])
    kb.learning.learn()
    return path, kb.learning.learned_list()


def test_an_association_names_the_document_and_the_question_as_asked(kb):
    path, listed = _learned(kb)
    item = next(i for i in listed["learned"] if i["kind"] == "association")
    assert item["summary"] == f'lifts {path} for "{QUESTION}"'
    assert item["questions"] == [QUESTION]
    assert item["key"].startswith("association:") and "bonu" in item["detail"]["terms"]   # kept for agents


def test_the_table_shows_the_summary_not_the_key(kb, cli):
    path, _ = _learned(kb)
    shown = cli("learned", "list", "--db", getattr(kb.db_path, "url", kb.db_path)).stdout
    assert "association:" not in shown and "bonu " not in shown
    assert "exploration bonus formula" in shown.replace("\n", " ").replace("│", " ")


def test_after_clear_history_the_terms_stand_in_for_the_question(kb):
    path, _ = _learned(kb)
    kb.learning.clear_history(all_=True)
    item = next(i for i in kb.learning.learned_list()["learned"] if i["kind"] == "association")
    assert item["questions"] == []
    assert item["summary"].startswith(f"lifts {path} for questions with the terms ")
