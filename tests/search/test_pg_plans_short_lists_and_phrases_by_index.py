"""On PostgreSQL a question's look-ups touch the rows they need: the keywords a question names are found on the
keywords' index (a JSON list of two keywords is not planned as a hash of 100 over the whole table), and a
phrase's documents come from its tokens' postings, read by their key."""

from __future__ import annotations

import contextlib
import json

import pytest

psycopg = pytest.importorskip("psycopg")

from kb_indexer.config import DbUrl  # noqa: E402
from kb_indexer.store.pg import fulltext as pg  # noqa: E402
from kb_indexer.store.pg.connection import PgConnection  # noqa: E402


def _plan(conn: PgConnection, sql: str, params: object) -> str:
    from kb_indexer.store.pg.dialect import translate

    rows = conn.raw.execute("EXPLAIN " + translate(sql), params).fetchall()
    return "\n".join(r[0] for r in rows)


def test_two_keywords_of_thousands_are_found_on_the_keywords_index(pg_url):
    with contextlib.closing(PgConnection.open(DbUrl(pg_url))) as conn:
        conn.execute("CREATE TABLE keywords (id BIGSERIAL PRIMARY KEY, keyword TEXT NOT NULL UNIQUE)")
        conn.execute("INSERT INTO keywords (keyword) SELECT 'keyword ' || i FROM generate_series(1, 5000) i")
        conn.execute("ANALYZE keywords")
        sql = "SELECT id, keyword FROM keywords WHERE keyword IN (SELECT value FROM json_each(?))"
        wanted = json.dumps(["keyword 17", "keyword 4000"])
        assert "Seq Scan on keywords" not in _plan(conn, sql, [wanted])
        assert sorted(r[1] for r in conn.execute(sql, (wanted,))) == ["keyword 17", "keyword 4000"]


def test_a_phrase_is_found_from_its_tokens_postings_by_index(pg_url):
    """A phrase's documents come from the positions in its tokens' postings, read on the postings' key (no
    document's text is read)."""
    raw = psycopg.connect(pg_url, autocommit=True)
    try:
        raw.execute("CREATE TABLE documents (id BIGINT PRIMARY KEY, filepath TEXT NOT NULL)")
        pg.create_schema(raw)
        body = {0: "shock wave here", 1: "wave and shock apart"}
        rows = [(i, f"title {i}", "", "", body.get(i % 7, f"other words w{i} x{i % 13} y{i % 17} z{i % 19}") +
                 " filler" * (i % 5)) for i in range(1, 2000)]
        raw.execute("INSERT INTO documents SELECT i, 'd' || i FROM generate_series(1, 1999) i")
        pg.write_rows(raw, rows)
        raw.execute("ANALYZE")
        params = {"t": [], "p0": ["shock", "wave"], "n0": 2}
        sql = pg._POSTINGS + pg._PHRASE.format(k=0)
        plan = "\n".join(r[0] for r in raw.execute("EXPLAIN " + sql, params).fetchall())
        assert "Seq Scan on text_postings" not in plan and "documents_text t" not in plan, plan
        _, found = pg._read(raw, [], [("shock", "wave")])
        assert found[("shock", "wave")][0].tolist() == [i for i in range(1, 2000) if i % 7 == 0]
    finally:
        raw.close()


def test_a_phrase_is_planned_with_its_values_every_time(pg_url):
    """The statement reading a phrase is never prepared: after five runs PostgreSQL may keep a generic plan for a
    prepared statement, which does not know how few documents hold all the phrase's tokens and reads the
    postings' document index instead (a quarter of a second a phrase at 20,000 documents)."""
    raw = psycopg.connect(pg_url, autocommit=True)
    try:
        raw.execute("CREATE TABLE documents (id BIGINT PRIMARY KEY, filepath TEXT NOT NULL)")
        pg.create_schema(raw)
        rows = [(i, "", "", "", "shock wave here" if i % 3 == 0 else f"other words w{i}") for i in range(1, 200)]
        raw.execute("INSERT INTO documents SELECT i, 'd' || i FROM generate_series(1, 199) i")
        pg.write_rows(raw, rows)
        for _ in range(12):   # past psycopg's prepare threshold and PostgreSQL's five custom plans
            _, found = pg._read(raw, ["other"], [("shock", "wave")])
            assert found[("shock", "wave")][0].tolist() == [i for i in range(1, 200) if i % 3 == 0]
        prepared = [r[0] for r in raw.execute("SELECT statement FROM pg_prepared_statements")]
        assert not any("HAVING count(*)" in s for s in prepared), prepared
    finally:
        raw.close()


def test_a_keywords_relations_are_read_with_their_names_by_index(pg_url):
    """The relations of a question's keywords: found on the similarity indexes, and each end's name looked up
    by id (the planner once hashed all of ``keywords`` twice: 2.3 ms a question at 5,000 keywords)."""
    from kb_indexer.search.expansion import _EDGE_SQL

    with contextlib.closing(PgConnection.open(DbUrl(pg_url))) as conn:
        conn.execute("CREATE TABLE keywords (id BIGSERIAL PRIMARY KEY, keyword TEXT NOT NULL UNIQUE)")
        conn.execute("CREATE TABLE keyword_similarities (id BIGSERIAL PRIMARY KEY, keyword_id_1 BIGINT NOT NULL, "
                     "keyword_id_2 BIGINT NOT NULL, similarity_type TEXT NOT NULL, context TEXT, score REAL, "
                     "directional INTEGER NOT NULL DEFAULT 0, source_keyword_id BIGINT)")
        conn.execute("CREATE INDEX s1 ON keyword_similarities(keyword_id_1)")
        conn.execute("CREATE INDEX s2 ON keyword_similarities(keyword_id_2)")
        conn.execute("INSERT INTO keywords (keyword) SELECT 'keyword ' || i FROM generate_series(1, 5000) i")
        conn.execute("INSERT INTO keyword_similarities (keyword_id_1, keyword_id_2, similarity_type) "
                     "SELECT i, i + 1, 'synonym' FROM generate_series(1, 4999) i")
        conn.execute("ANALYZE")
        sql = _EDGE_SQL + " ORDER BY s.id"
        ids = json.dumps([17, 4000])
        plan = _plan(conn, sql, {"ids": ids})
        assert "Seq Scan on keywords" not in plan and "Seq Scan on keyword_similarities" not in plan, plan
        rows = conn.execute(sql, {"ids": ids}).fetchall()
        assert [(r["kw1"], r["kw2"]) for r in rows] == [("keyword 16", "keyword 17"), ("keyword 17", "keyword 18"),
                                                        ("keyword 3999", "keyword 4000"),
                                                        ("keyword 4000", "keyword 4001")]
