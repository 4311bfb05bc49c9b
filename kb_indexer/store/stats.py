"""``kbindex db-stats``: what the index holds, counted."""

from __future__ import annotations

from typing import Any

from kb_indexer.store.dbapi import Connection
from kb_indexer.store.migrations import schema_version
from kb_indexer.store.sparse import describe
from kb_indexer.store.vectors import coverage as vector_coverage, vector_search


def db_stats(conn: Connection, db: str, kb_root: str) -> dict[str, Any]:
    """Rows per table, relations per type, vectors, the full-text index, the schema (``db``, ``kb_root``: where)."""
    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])
    by_type = {r[0]: r[1] for r in conn.execute(
        "SELECT similarity_type, COUNT(*) FROM keyword_similarities GROUP BY similarity_type ORDER BY 1")}
    return {
        "documents": one("SELECT COUNT(*) FROM documents"),
        "keywords": one("SELECT COUNT(*) FROM keywords"),
        "document_keywords": one("SELECT COUNT(*) FROM document_keywords"),
        "similarities": one("SELECT COUNT(*) FROM keyword_similarities"),
        "similarities_by_type": by_type,
        "queries": one("SELECT COUNT(*) FROM queries"),
        "query_attempts": one("SELECT COUNT(*) FROM query_attempts"),
        "feedback": one("SELECT COUNT(*) FROM query_feedback"),
        "embeddings": vector_coverage(conn),
        "vector_search": vector_search(conn),
        "fulltext_index": describe(conn),
        "db": db, "kb_root": kb_root,
        "schema": schema_version(conn),
    }
