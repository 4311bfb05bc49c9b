"""A long-lived process (MCP server, chat) keeps its PostgreSQL connection: when the server drops it (a
restart, a failover, an idle timeout), the next read opens it again and is retried once; a write is
reported as a clear error, and the command after it works."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")


def _drop_connection(kb, pg_url) -> None:
    pid = kb.conn.raw.info.backend_pid
    with psycopg.connect(pg_url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] is True


def test_a_read_after_the_server_dropped_the_connection_is_retried(pg_url, project):
    from kb_indexer.api import KnowledgeBase

    kb, _ = KnowledgeBase.init(pg_url, project / "knowledge-base")
    with kb:
        kb.sync()
        _drop_connection(kb, pg_url)
        assert kb.list_docs()["count"] == 18


def test_a_write_on_a_dropped_connection_is_an_error_then_the_next_command_works(pg_url, project):
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.store import meta, transaction
    from kb_indexer.store.errors import PgOperationalError, translate

    kb, _ = KnowledgeBase.init(pg_url, project / "knowledge-base")
    with kb:
        _drop_connection(kb, pg_url)
        with pytest.raises(PgOperationalError) as err:
            with transaction(kb.conn):  # a write: its transaction cannot be retried on a new connection
                meta.put(kb.conn, "probe", "1")
        mapped = translate(err.value, kb.db_path)
        assert mapped is not None and mapped.code == "db_unavailable" and "was lost during a write" in mapped.message
        assert "***" in mapped.message or "@" not in mapped.message  # the URL is shown redacted
        with transaction(kb.conn):
            meta.put(kb.conn, "probe", "2")
        assert meta.get(kb.conn, "probe") == "2"
