"""The SQLite dialect the features write, translated into PostgreSQL (kb_indexer.store.pg.dialect): one
test per rule, and the translated SQL run on a real server where the rule is about types."""

from __future__ import annotations

import contextlib
import json

import pytest

from kb_indexer.store.pg.dialect import placeholders, translate


def test_begin_immediate_is_begin():
    assert translate("BEGIN IMMEDIATE") == "BEGIN"


def test_now_timestamps_keep_sqlites_text_form():
    sql = translate("UPDATE t SET a = strftime('%Y-%m-%dT%H:%M:%S', 'now'), b = strftime('%Y-%m-%dT%H:%M:%f', 'now')")
    assert sql == ("UPDATE t SET a = to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS'), "
                   "b = to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS')")


def test_an_unknown_time_format_is_refused_not_guessed():
    with pytest.raises(ValueError):
        translate("SELECT strftime('%s', 'now')")


def test_two_argument_min_and_max_are_least_and_greatest_but_aggregates_stay():
    assert translate("SELECT min(1.0, (max(a, b)) / 3), max(id), MIN(x) FROM t") == \
        "SELECT LEAST(1.0, (GREATEST(a, b)) / 3), max(id), MIN(x) FROM t"
    assert translate("SELECT max(coalesce(a, 0), 'x,y') FROM t") == "SELECT GREATEST(coalesce(a, 0), 'x,y') FROM t"


def test_json_array_parameters_read_as_ids_or_as_text_in_an_array():
    assert translate("SELECT 1 FROM d WHERE d.id IN (SELECT value FROM json_each(?))") == \
        ("SELECT 1 FROM d WHERE d.id = ANY(ARRAY(SELECT value::bigint FROM json_array_elements_text((%s)::json) "
         "AS j(value)))")
    assert translate("SELECT 1 FROM s WHERE s.keyword_id_1 IN (SELECT value FROM json_each(:ids))") == \
        ("SELECT 1 FROM s WHERE s.keyword_id_1 = "
         "ANY(ARRAY(SELECT value::bigint FROM json_array_elements_text((%(ids)s)::json) AS j(value)))")
    assert translate("SELECT id FROM keywords WHERE keyword IN (SELECT value FROM json_each(?))") == \
        ("SELECT id FROM keywords WHERE keyword = "
         "ANY(ARRAY(SELECT value FROM json_array_elements_text((%s)::json) AS j(value)))")


def test_not_in_a_json_array_stays_not_in():
    assert translate("DELETE FROM p WHERE pair NOT IN (SELECT value FROM json_each(?))") == \
        "DELETE FROM p WHERE pair NOT IN (SELECT value FROM json_array_elements_text((%s)::json) AS j(value))"


def test_ids_on_either_of_two_id_columns_are_two_arrays_the_indexes_can_scan():
    ids = "ARRAY(SELECT value::bigint FROM json_array_elements_text((%(ids)s)::json) AS j(value))"
    assert translate("SELECT s.id FROM s WHERE (s.keyword_id_1 IN (SELECT value FROM json_each(:ids)) OR "
                     "s.keyword_id_2 IN (SELECT value FROM json_each(:ids)))") == \
        f"SELECT s.id FROM s WHERE (s.keyword_id_1 = ANY({ids}) OR s.keyword_id_2 = ANY({ids}))"
    texts = "ARRAY(SELECT value FROM json_array_elements_text((%s)::json) AS j(value))"
    assert translate("SELECT 1 FROM t WHERE (kind IN (SELECT value FROM json_each(?)) OR "
                     "b_id IN (SELECT value FROM json_each(?)))") == \
        f"SELECT 1 FROM t WHERE (kind = ANY({texts}) OR b_id = ANY({ids.replace('%(ids)s', '%s')}))"   # one IN each


def test_ids_on_either_column_find_the_same_rows_on_a_server(pg_url):
    from kb_indexer.config import DbUrl
    from kb_indexer.store.pg.connection import PgConnection

    with contextlib.closing(PgConnection.open(DbUrl(pg_url))) as conn:
        conn.execute("CREATE TABLE s (id BIGINT PRIMARY KEY, a_id BIGINT, b_id BIGINT)")
        conn.executemany("INSERT INTO s VALUES (?, ?, ?)", [(1, 1, 2), (2, 2, 3), (3, 3, 4), (4, 5, 1)])
        rows = conn.execute("SELECT id FROM s WHERE (a_id IN (SELECT value FROM json_each(?)) OR "
                            "b_id IN (SELECT value FROM json_each(?))) ORDER BY id", (json.dumps([1, 3]),) * 2)
        assert [r[0] for r in rows] == [1, 2, 3, 4]


def test_a_json_array_of_ids_filtered_by_an_id_subquery():
    assert translate("SELECT count(*) FROM (SELECT value FROM json_each(?) WHERE value IN (SELECT id FROM documents))") \
        == ("SELECT count(*) FROM (SELECT value FROM (SELECT value::bigint AS value FROM "
            "json_array_elements_text((%s)::json) AS j(value)) AS ids WHERE value IN (SELECT id FROM documents))")


def test_insert_or_ignore_is_on_conflict_do_nothing_before_returning():
    assert translate("INSERT OR IGNORE INTO t (a) VALUES (?)") == "INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING"
    assert translate("insert or ignore into t (a) values (?) RETURNING id") == \
        "INSERT INTO t (a) values (%s) ON CONFLICT DO NOTHING RETURNING id"


def test_placeholders_and_percent_signs_outside_and_inside_quotes():
    assert placeholders("SELECT ? WHERE a LIKE '%x?' AND b = :name AND c::text = ?") == \
        "SELECT %s WHERE a LIKE '%%x?' AND b = %(name)s AND c::text = %s"
    assert placeholders("SELECT a % 2, \"col:x\"") == "SELECT a %% 2, \"col:x\""


def test_each_sql_string_is_translated_once():
    translate.cache_clear()
    for _ in range(3):
        translate("SELECT ? FROM documents")
    info = translate.cache_info()
    assert (info.misses, info.hits) == (1, 2)


def test_translated_sql_runs_with_postgresqls_strict_types(pg_url):
    from kb_indexer.config import DbUrl
    from kb_indexer.store.pg.connection import PgConnection

    with contextlib.closing(PgConnection.open(DbUrl(pg_url))) as conn:
        conn.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION)")
        conn.executemany("INSERT OR IGNORE INTO t (id, name, score) VALUES (?, ?, ?)",
                         [(1, "a", 0.5), (2, "b", 0.25), (1, "dup", 0.0)])
        rows = conn.execute("SELECT id, name, min(1.0, score * 4) AS capped, "
                            "strftime('%Y-%m-%dT%H:%M:%S', 'now') AS at FROM t "
                            "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", (json.dumps([1, 2, 3]),)).fetchall()
        assert [(r[0], r["name"], r["capped"]) for r in rows] == [(1, "a", 1.0), (2, "b", 1.0)]
        assert len(rows[0]["at"]) == 19 and rows[0]["at"][10] == "T"
        assert dict(rows[0]).keys() == {"id", "name", "capped", "at"}
        assert conn.execute("SELECT avg(id) FROM t").fetchone()[0] == 1.5  # numeric comes back as float


def test_all_but_the_last_characters_is_left_with_a_negative_length():
    assert translate("SELECT substr(filepath, 1, length(filepath) - 9) || '.keywords.json' FROM documents") == \
        "SELECT left(filepath, -9) || '.keywords.json' FROM documents"
