"""A long-lived process (the MCP server, chat) serving a PostgreSQL URL it cannot use (a wrong password, a
database that is not there) answers its first request with the server's own reason at once: its pool of
connections waited 30 s and blamed busy connections, the reason only in its log."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg")


def test_the_first_request_fails_with_the_servers_reason(pg_url):
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.errors import KbError

    head, _, query = pg_url.partition("?")
    missing = head.rsplit("/", 1)[0] + "/no_such_database" + (f"?{query}" if query else "")
    with KnowledgeBase.serving(missing):
        with pytest.raises(KbError) as failed:
            KnowledgeBase.open(missing)
    assert "no_such_database" in failed.value.message and "does not exist" in failed.value.message
    assert "within 30 s" not in failed.value.message
