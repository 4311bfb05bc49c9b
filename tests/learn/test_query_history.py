"""Every query is recorded: queries / query_attempts rows with top results and expansions."""

from __future__ import annotations

import json

import pytest

from kb_indexer.learn.history import attempts_for, get_attempt
from kb_indexer.api import QueryOptions

pytestmark = pytest.mark.both_engines


def rows(kb, table):
    return [dict(r) for r in kb.conn.execute(f"SELECT * FROM {table} ORDER BY id")]


def test_query_writes_one_query_and_one_attempt(kb):
    out = kb.query("How does RL work?", ["RL"], options=QueryOptions(context="game AI", limit=3))
    (q,) = rows(kb, "queries")
    (a,) = rows(kb, "query_attempts")
    assert out["query_id"] == q["id"] and out["attempt_id"] == a["id"] and a["query_id"] == q["id"]
    assert q["question"] == "How does RL work?" and q["context"] == "game AI"
    assert json.loads(a["keywords"]) == ["RL"]
    assert a["expand_depth"] == 1 and a["threshold"] == 0.35 and a["method"] == "hybrid"
    assert a["result_count"] == out["count"] == 3
    top = json.loads(a["top_results"])
    assert [t["filepath"] for t in top] == [r["filepath"] for r in out["results"]]
    assert set(top[0]) == {"filepath", "score", "matched_keywords", "sources"}
    assert top[0]["score"] == out["results"][0]["relevance_score"]
    exps = json.loads(a["expansions"])
    rel_id = kb.conn.execute(
        "SELECT s.id FROM keyword_similarities s JOIN keywords k1 ON k1.id = s.keyword_id_1 "
        "JOIN keywords k2 ON k2.id = s.keyword_id_2 WHERE s.similarity_type = 'abbreviation' "
        "AND 'rl' IN (k1.keyword, k2.keyword) AND 'reinforcement learning' IN (k1.keyword, k2.keyword)").fetchone()[0]
    (e,) = [e for e in exps if e["keyword"] == "reinforcement learning"]
    assert e["user_keyword"] == "rl" and e["relation_id"] == rel_id and e["similarity_type"] == "abbreviation"
    assert e["path"] == [rel_id] and e["hops"] == 1 and "context_match" in e
    options = json.loads(a["options"])
    assert options["keywords_from"] == "given" and options["method_requested"] == "auto" and options["limit"] == 3


def test_same_question_and_context_reuse_the_query(kb):
    first = kb.query("reinforcement learning")
    second = kb.query("reinforcement learning", options=QueryOptions(method="fulltext", limit=2))
    other_ctx = kb.query("reinforcement learning", options=QueryOptions(context="robots"))
    assert first["query_id"] == second["query_id"] != other_ctx["query_id"]
    assert first["attempt_id"] < second["attempt_id"] < other_ctx["attempt_id"]
    attempts = attempts_for(kb.conn, first["query_id"])
    assert [a["method"] for a in attempts] == ["hybrid", "fulltext"]
    assert attempts[1]["result_count"] == 2
    assert len(rows(kb, "queries")) == 2 and len(rows(kb, "query_attempts")) == 3


def test_derived_keywords_recorded_and_top_results_capped(kb):
    out = kb.query("reinforcement learning", options=QueryOptions(limit=50))
    a = get_attempt(kb.conn, out["attempt_id"])
    assert a["keywords"] == ["reinforcement learning"] and a["options"]["keywords_from"] == "question"
    assert len(a["top_results"]) == min(10, out["count"]) and a["result_count"] == out["count"]
    assert a["expansions"] and all({"user_keyword", "keyword", "relation_id", "similarity_type", "weight"}
                                   <= set(e) for e in a["expansions"])


def test_record_false_writes_nothing(kb):
    out = kb.query("reinforcement learning", options=QueryOptions(record=False))
    assert "query_id" not in out and rows(kb, "queries") == []


def _failing_attempt_writes(kb, index_engine):
    """The server refuses every attempt row (a trigger), as a full disk would: after the query row."""
    if index_engine == "sqlite":
        kb.conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON query_attempts BEGIN "
                        "SELECT RAISE(ABORT, 'disk full'); END")
        return
    kb.conn.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'disk full'; END $$")
    kb.conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON query_attempts FOR EACH ROW EXECUTE FUNCTION refuse()")


def test_recording_is_one_transaction(kb, index_engine):
    """A failure while writing the attempt leaves no half-written query behind, and the connection usable."""
    _failing_attempt_writes(kb, index_engine)
    with pytest.raises(Exception, match="disk full"):
        kb.query("reinforcement learning")
    assert rows(kb, "queries") == [] and not kb.conn.in_transaction
    kb.conn.execute("DROP TRIGGER refuse" + (" ON query_attempts" if index_engine == "postgres" else ""))
    assert kb.query("reinforcement learning")["query_id"] == rows(kb, "queries")[0]["id"]


def test_unwritable_history_still_answers(kb, monkeypatch, cli):
    import sqlite3

    import kb_indexer.learn.history as history

    def readonly(*a, **k):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(history, "record", readonly)
    out = kb.query("reinforcement learning")
    assert out["count"] > 0 and out["query_id"] is None and out["attempt_id"] is None
    assert "readonly" in out["history_error"]
    r = cli("query", "reinforcement learning", "-f", "json", "--db", str(kb.db_path), "--kb", str(kb.kb_root))
    assert r.exit_code == 0 and "not recorded" in r.stderr
    data = json.loads(r.stdout)
    assert data["query_id"] is None and data["count"] > 0
    assert "not recorded" in data["history_error"] and data["history_error_code"] == "read_only"
