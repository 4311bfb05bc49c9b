"""The ``meta`` table is read and written in one module, kb_indexer/store/meta.py (issue 28: the upsert
SQL was written in five modules)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from kb_indexer.store import meta

PACKAGE = Path(__file__).resolve().parents[2] / "kb_indexer"
# A statement on the table: INSERT/REPLACE INTO meta, FROM meta (SELECT, DELETE), UPDATE meta, JOIN meta.
META_SQL = re.compile(r"\b(?:INTO|FROM|UPDATE|JOIN)\s+meta\b", re.IGNORECASE)
ONE_PLACE = PACKAGE / "store" / "meta.py"


def test_only_store_meta_holds_sql_for_the_meta_table():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != ONE_PLACE
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if META_SQL.search(line)]
    assert offenders == []
    assert META_SQL.search(ONE_PLACE.read_text(encoding="utf-8"))  # the pattern does find the SQL


def _table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    return conn


def test_prefixes_match_literally_not_as_like_patterns():
    conn = _table()
    meta.put(conn, "similarities_hash:/a/b%c", "1")
    meta.put(conn, "similaritiesXhash:/a", "2")    # `_` would match any character in LIKE
    meta.put(conn, "SIMILARITIES_HASH:/a", "3")    # LIKE ignores ASCII case
    assert meta.with_prefixes(conn, "similarities_hash:") == {"similarities_hash:/a/b%c": "1"}
    meta.delete_prefixes(conn, "similarities_hash:")
    assert meta.get(conn, "similarities_hash:/a/b%c") is None
    assert meta.get(conn, "similaritiesXhash:/a") == "2" and meta.get(conn, "SIMILARITIES_HASH:/a") == "3"


def test_counter_json_and_delete():
    conn = _table()
    meta.increment(conn, "v")
    meta.increment(conn, "v")
    assert meta.get(conn, "v") == "2"
    meta.put_json(conn, "j", {"b": 1, "a": [2]})
    assert meta.get(conn, "j") == '{"a":[2],"b":1}' and meta.get_json(conn, "j") == {"a": [2], "b": 1}
    meta.put(conn, "j", "not json")
    assert meta.get_json(conn, "j") == {} and meta.get_json(conn, "absent") == {}
    meta.delete(conn, "v", "j", "absent")
    assert conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0
