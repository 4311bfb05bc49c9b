"""A kbindex session on a PostgreSQL server reached over TCP is probed from both ends: the server sends TCP
keepalives to the client (so the session of a client that vanished ends after about 2 minutes, and its locks
with it), the client to the server (so a command whose server vanished fails instead of waiting forever), and
the server ends a transaction left idle for 10 minutes. A lock is waited for up to the busy timeout. Settings
the URL gives itself (its ``options``, a keepalive parameter) win over kbindex's.

A server of its own, listening on loopback TCP (the session's test server has a Unix socket only, where
keepalives do not apply)."""

from __future__ import annotations

import shutil
import socket
import tempfile

import pytest

pytest.importorskip("psycopg")
pgserver = pytest.importorskip("pgserver")


@pytest.fixture(scope="module")
def tcp_url():
    from pgserver._commands import pg_ctl

    pgdata = tempfile.mkdtemp(prefix="kbindex-pgtcp-")
    server = pgserver.get_server(pgdata, cleanup_mode="stop")   # its data folder, initialised for its user
    user = server.system_user
    server.cleanup()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pg_ctl(["-w", "-o", "-h 127.0.0.1", "-o", f"-p {port}", "-o", f"-k {pgdata}", "-l", f"{pgdata}/log", "start"],
           pgdata=pgdata, user=user, timeout=60)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        pg_ctl(["-w", "stop"], pgdata=pgdata, user=user, timeout=60)
        shutil.rmtree(pgdata, ignore_errors=True)


def _shown(conn, *names: str) -> list[str]:
    return [conn.execute(f"SHOW {name}").fetchone()[0] for name in names]


def _client_probes(conn) -> tuple[int, int, int, int]:
    sock = socket.socket(fileno=conn.raw.pgconn.socket)
    try:
        return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT))
    finally:
        sock.detach()


def test_a_session_is_probed_both_ways_and_its_waits_end(tcp_url, monkeypatch):
    from kb_indexer.config import DbUrl
    from kb_indexer.store.pg.connection import PgConnection

    monkeypatch.delenv("KBINDEX_BUSY_TIMEOUT", raising=False)
    conn = PgConnection.open(DbUrl(tcp_url))
    try:
        keepalives = _shown(conn, "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
        assert keepalives == ["60", "10", "6"]
        assert _shown(conn, "lock_timeout", "idle_in_transaction_session_timeout", "statement_timeout") == \
            ["30s", "10min", "0"]
        assert _shown(conn, "application_name") == ["kbindex"]
        assert _client_probes(conn) == (1, 60, 10, 6)
    finally:
        conn.close()


def test_the_urls_own_settings_win(tcp_url, monkeypatch):
    from kb_indexer.config import DbUrl
    from kb_indexer.store.pg.connection import PgConnection

    monkeypatch.setenv("KBINDEX_BUSY_TIMEOUT", "2.5")
    conn = PgConnection.open(DbUrl(f"{tcp_url}?options=-c%20statement_timeout%3D7s&keepalives_idle=30"
                                   "&application_name=team-agent"))
    try:
        assert _shown(conn, "lock_timeout", "statement_timeout", "application_name") == ["2500ms", "7s", "team-agent"]
        assert _client_probes(conn)[1] == 30
    finally:
        conn.close()
