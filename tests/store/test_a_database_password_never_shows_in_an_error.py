"""A PostgreSQL URL's password never reaches an error message, even where libpq quotes the URL, with its scheme
in capitals, or a piece of it it cannot parse (``invalid percent-encoded token: "S3cret%zzPW"``)."""

from __future__ import annotations

import json
import subprocess

import pytest

from kb_indexer.config import redact_message
from tests.conftest import kbindex_exe

URLS = ["POSTGRESQL://alice:S3cretPW@127.0.0.1:1/kb", "Postgres://alice:S3cretPW@127.0.0.1:1/kb",
        "postgresql://alice:S3cretPW@[::1/kb", "postgresql://alice:S3cret%zzPW@127.0.0.1:1/kb",
        "postgresql://alice:S3cretPW@127.0.0.1:1/kb", "postgresql://alice@127.0.0.1:1/kb?password=S3cretPW"]


@pytest.mark.parametrize("url", URLS)
def test_the_command_line_hides_the_password(run, tmp_path, url):
    res = run("list-docs", "--format", "json", cwd=tmp_path, env={"KBINDEX_DB": url})
    assert res.returncode == 1 and res.error()["code"] in ("db_unavailable", "bad_database", "not_initialised")
    assert "S3cret" not in res.stdout + res.stderr and "***" in res.stderr


def test_a_message_loses_every_form_of_the_password():
    url = "postgresql://alice:S3cret%21PW@host/kb?sslmode=require&password=Other"
    text = 'bad "S3cret%21PW", "S3cret!PW", "Other", postgresql://alice:S3cret%21PW@host/kb'
    out = redact_message(text, url)
    assert "S3cret" not in out and "Other" not in out and out.count("***") == 4
    assert redact_message("no password here", "postgresql://alice@host/kb") == "no password here"


def test_the_mcp_servers_pool_logs_hide_it_too(tmp_path):
    """The MCP server keeps a pool of connections, which logs libpq's message itself on stderr."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "kb_search", "arguments": {"keywords": ["rl"]}}}]
    proc = subprocess.run(kbindex_exe() + ["mcp", "--db", "postgresql://u:S3cret%zzPW@127.0.0.1:1/db"],
                          input="\n".join(json.dumps(x) for x in lines) + "\n", capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert "error connecting" in proc.stderr    # the pool's own log line, with the password hidden
    assert "S3cret" not in proc.stdout + proc.stderr
