"""The same scenarios on both engines (SQLite file, PostgreSQL server started by the tests: pgserver):
init, sync of the bundled KB (keywords files, similarities.json), list-docs, show, keywords, relate and
unrelate, a recorded query (keyword method: full-text ranking on PostgreSQL comes with its own module),
history, feedback, learn and its undo, export -> import. Results are compared between the engines."""

from __future__ import annotations

import json

import pytest

from kb_indexer.search.options import QueryOptions

KEYWORD = QueryOptions(method="keyword")
QUESTION = "How does the Go program combine tree search and networks?"


def _open(engine_db, project):
    from kb_indexer.api import KnowledgeBase

    kb, init = KnowledgeBase.init(engine_db, project / "knowledge-base")
    sync = kb.sync()
    return kb, init, sync


def _recorded_query(kb) -> int:
    """A query recorded as `kbindex query` records it (its attempt and top results), without ranking: full
    text on PostgreSQL comes with kb_indexer.store.pg.fulltext (see test_query_ranks_the_same_on_both_engines)."""
    from kb_indexer.learn.history import record

    results = [{"filepath": f, "relevance_score": 1.0, "matched_keywords": ["alphago"], "sources": ["keyword"]}
               for f in ("alphago-architecture.md", "monte-carlo-tree-search.md")]
    qid, _ = record(kb.conn, QUESTION, None, keywords=["alphago"], expand_depth=1, threshold=0.3,
                    method="keyword", results=results, expansions=[], options={"keywords_from": "given"})
    return qid


def _needs_fulltext(engine_db) -> None:
    import importlib.util

    if str(engine_db).startswith("postgresql://") and importlib.util.find_spec("kb_indexer.store.pg.fulltext") is None:
        pytest.skip("full-text ranking on PostgreSQL comes with kb_indexer.store.pg.fulltext (issue 29, wt-pgtext)")


def _scenario(kb) -> dict:
    """What a person and an agent do, reduced to results that must not depend on the engine."""
    out: dict = {}
    docs = kb.list_docs()["documents"]
    out["docs"] = [(d["filepath"], d["title"], d["keyword_count"]) for d in docs]
    show = kb.show("alphago-architecture.md")
    out["show"] = {k: show[k] for k in ("filepath", "title", "summary")}
    out["keywords"] = sorted(k["keyword"] for k in kb.keywords("alphago-architecture.md")["keywords"])
    out["docs_of"] = sorted(d["filepath"] for d in kb.docs("monte carlo tree search")["documents"])
    rel = kb.relate("alphago", "go", "application", "AlphaGo plays Go", score=0.8)
    out["relate"] = {k: rel[k] for k in ("keyword1", "keyword2", "type", "score")}
    out["similar"] = sorted((s["keyword"], s["similarity_type"], s["score"])
                            for s in kb.similar("alphago")["similar_keywords"])
    out["unrelate"] = kb.unrelate("alphago", "go", "application")["removed"]
    qid = _recorded_query(kb)
    out["history"] = [(h["question"], h["attempts"]) for h in kb.learning.history()["queries"]]
    fb = kb.learning.feedback(qid, ["alphago-architecture.md"], [])
    out["feedback"] = [(r["filepath"], r["helpful"]) for r in fb["recorded"]]
    learned = kb.learning.learn()
    out["learned"] = sorted((s["kind"], s.get("filepath")) for s in learned["suggestions"])
    items = kb.learning.learned_list()["learned"]
    out["learned_items"] = sorted((i["kind"], i["status"], i["weight"]) for i in items)
    out["undo"] = kb.learning.learned_remove([i["id"] for i in items])["count"]
    out["after_undo"] = sorted((i["kind"], i["status"])
                               for i in kb.learning.learned_list(include_removed=True)["learned"])
    return out


@pytest.fixture(scope="module")
def sqlite_results(tmp_path_factory):
    """The scenario's results on SQLite, the reference the PostgreSQL run is compared with."""
    import shutil

    from tests.conftest import BUNDLED_KB, BUNDLED_SIMILARITIES

    root = tmp_path_factory.mktemp("reference")
    shutil.copytree(BUNDLED_KB, root / "knowledge-base")
    shutil.copy(BUNDLED_SIMILARITIES, root / "similarities.json")
    kb, _, _ = _open(str(root / "kbindex.db"), root)
    try:
        return _scenario(kb)
    finally:
        kb.close()


def test_init_and_sync_report_the_same_on_both_engines(engine_db, project):
    kb, init, sync = _open(engine_db, project)
    try:
        assert init["created"] is True and init["migrations_applied"]
        assert sync["errors"] == [] and sync["added"] == 18
        assert sync["similarities"]["imported"] == 72
        again = kb.sync()
        assert again["added"] == 0 and again["unchanged"] == 18
    finally:
        kb.close()


def test_reads_writes_history_feedback_and_learning_give_the_same_results(engine_db, project, sqlite_results):
    kb, _, _ = _open(engine_db, project)
    try:
        got = _scenario(kb)
    finally:
        kb.close()
    assert got["learned"], "the helpful mark taught nothing"
    assert got == sqlite_results


def test_reopened_index_keeps_what_was_written(engine_db, project):
    from kb_indexer.api import KnowledgeBase

    kb, _, _ = _open(engine_db, project)
    qid = _recorded_query(kb)
    kb.learning.feedback(qid, ["alphago-architecture.md"], ["supervised-learning-basics.md"])
    kb.close()
    with KnowledgeBase.open(engine_db) as again:
        shown = again.learning.feedback_show(qid)
        assert sorted(f["filepath"] for f in shown["feedback"]) == ["alphago-architecture.md",
                                                                   "supervised-learning-basics.md"]
        assert again.kb_root == (project / "knowledge-base").absolute()


def _normalised(export: dict, *, schema: bool = True) -> str:
    """An export as text; ``schema=False`` leaves out the migrations list, which names the exporting
    engine's own migrations (SQLite's m001..m110, PostgreSQL's m001_schema...)."""
    return json.dumps(export if schema else {k: v for k, v in export.items() if k != "migrations"}, sort_keys=True)


def test_export_from_sqlite_imports_into_postgres_and_back_unchanged(project, tmp_path, pg_url):
    from kb_indexer.api import KnowledgeBase

    first, _, _ = _open(str(tmp_path / "a.db"), project)
    qid = _recorded_query(first)
    first.learning.feedback(qid, ["alphago-architecture.md"], [])
    first.learning.learn()
    first.relate("alphago", "go", "application", "AlphaGo plays Go", score=0.8)
    exported = first.export()
    first.close()

    with KnowledgeBase.init(pg_url, project / "knowledge-base")[0] as pg:
        pg.import_(exported)
        via_pg = pg.export()
        # new rows after an import get ids past the imported ones
        assert pg.relate("alphago", "go", "contrast", "not the same thing", score=0.3)["id"] > 72
    assert _normalised(via_pg, schema=False) == _normalised(exported, schema=False)

    with KnowledgeBase.init(str(tmp_path / "b.db"), project / "knowledge-base")[0] as back:
        back.import_(via_pg)
        assert _normalised(back.export()) == _normalised(exported)
        # what an import brings back works: the learned item can be undone there
        items = back.learning.learned_list()["learned"]
        assert items and back.learning.learned_remove([items[0]["id"]])["removed"] == [items[0]["id"]]


def test_query_ranks_the_same_on_both_engines(engine_db, project, sqlite_results):
    _needs_fulltext(engine_db)
    kb, _, _ = _open(engine_db, project)
    try:
        res = kb.query(QUESTION, ["alphago", "tree search"], options=KEYWORD)
        assert res.get("history_error") is None and res["results"]
        assert kb.learning.history(res["query_id"])["query_id"] == res["query_id"]
    finally:
        kb.close()


def test_init_refuses_a_database_of_another_application(pg_url, project):
    import psycopg

    from kb_indexer.api import KnowledgeBase
    from kb_indexer.errors import KbError

    with psycopg.connect(pg_url, autocommit=True) as other:
        other.execute("CREATE TABLE invoices (id int PRIMARY KEY, total numeric)")
    with pytest.raises(KbError) as err:
        KnowledgeBase.init(pg_url, project / "knowledge-base")
    assert err.value.code == "bad_database" and "invoices" in err.value.message
    with psycopg.connect(pg_url, autocommit=True) as other:  # nothing of kbindex's was created
        assert other.execute("SELECT to_regclass('documents')").fetchone()[0] is None


def test_a_server_without_the_schema_is_not_initialised(pg_url):
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.errors import KbError

    with pytest.raises(KbError) as err:
        KnowledgeBase.open(pg_url)
    assert err.value.code == "not_initialised" and "kbindex init" in err.value.message


def test_a_server_schema_from_a_newer_kbindex_is_refused(pg_url, project):
    import psycopg

    from kb_indexer.api import KnowledgeBase
    from kb_indexer.errors import KbError

    KnowledgeBase.init(pg_url, project / "knowledge-base")[0].close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO _migrations (name) VALUES ('m999_from_the_future')")
    with pytest.raises(KbError) as err:
        KnowledgeBase.open(pg_url)
    assert err.value.code == "schema" and "m999_from_the_future" in err.value.message


def test_a_renamed_file_keeps_its_feedback_history_and_learned_items(engine_db, project):
    from kb_indexer.learn.history import record

    kb, _, _ = _open(engine_db, project)
    try:
        moved = "markov-decision-processes.md"  # a document without a keywords file beside it
        qid, _ = record(kb.conn, "What is a Markov decision process?", None, keywords=["mdp"], expand_depth=1,
                        threshold=0.3, method="keyword", expansions=[], options={},
                        results=[{"filepath": moved, "relevance_score": 1.0, "matched_keywords": ["mdp"],
                                  "sources": ["keyword"]}])
        kb.learning.feedback(qid, [moved], [])
        kb.learning.learn()
        root = project / "knowledge-base"
        (root / moved).rename(root / "mdp.md")
        sync = kb.sync()
        assert sync["errors"] == [] and sync["renamed"] == 1
        assert [f["filepath"] for f in kb.learning.feedback_show(qid)["feedback"]] == ["mdp.md"]
        attempt = kb.learning.history(qid)["attempts"][0]
        assert [r["filepath"] for r in attempt["top_results"]] == ["mdp.md"]
        assert [i["detail"]["filepath"] for i in kb.learning.learned_list()["learned"]] == ["mdp.md"]
    finally:
        kb.close()
