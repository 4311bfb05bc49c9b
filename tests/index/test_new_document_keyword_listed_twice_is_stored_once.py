"""A new document's keyword rows are plain inserts (no upsert): a keyword given twice (the store does not
rely on the loader's own duplicate check) is still stored once, in its first place, with its last values."""

from __future__ import annotations

from pathlib import Path

from kb_indexer.store.connection import connect, transaction
from kb_indexer.store.documents import KeywordIds, upsert_document
from kb_indexer.store.migrations import migrate


def _store(conn, filepath: str, keywords: list[tuple[str, str | None, str]]) -> int:
    with transaction(conn):
        doc_id, created = upsert_document(
            conn, KeywordIds(conn), filepath=filepath, title="T", summary="S", body="body words",
            keywords=keywords, content_hash="h", stat_sig="s", keywords_file=None)
    assert created
    return doc_id


def test_new_document_keyword_listed_twice_is_stored_once(tmp_path: Path):
    conn = connect(tmp_path / "kb.db", create=True)
    migrate(conn)
    doc_id = _store(conn, "a.md", [("Alpha", "x", "file"), ("beta", None, "file"), ("alpha", "y", "generated")])
    rows = conn.execute("SELECT k.keyword, dk.category, dk.source, dk.weight FROM document_keywords dk "
                        "JOIN keywords k ON k.id = dk.keyword_id WHERE dk.document_id = ? ORDER BY dk.id",
                        (doc_id,)).fetchall()
    assert [tuple(r) for r in rows] == [("alpha", "y", "generated", 0.25), ("beta", None, "file", 1.0)]


def test_new_document_keywords_keep_their_order(tmp_path: Path):
    conn = connect(tmp_path / "kb.db", create=True)
    migrate(conn)
    doc_id = _store(conn, "b.md", [("gamma", None, "file"), ("alpha", None, "frontmatter"), ("beta", None, "file")])
    shown = conn.execute("SELECT keywords FROM documents_fts WHERE rowid = ?", (doc_id,)).fetchone()[0]
    assert shown == "gamma ; alpha ; beta"
