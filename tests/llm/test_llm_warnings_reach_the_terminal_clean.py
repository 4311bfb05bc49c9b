"""Text kbindex did not write (an LLM server's error message, an SQLite message, a path) reaches stderr
without escape sequences: a server answering HTTP 500 with an OSC title and a screen clear in its error
message sets no window title and clears nothing."""

from __future__ import annotations

from llm_helpers import Reply, openai_reply

from kb_indexer.llm import cache as llm_cache

PAYLOAD = "boom\x1b]0;PWNED\x07\x1b[2J\x9b31m"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
          "additionalProperties": False}


def assert_clean(err: str) -> None:
    assert err, "nothing was written to stderr"
    assert not any(c in err for c in "\x1b\x07\x9b"), repr(err)
    assert "PWNED" not in err


def test_a_server_error_message_on_retry_is_terminal_safe(make_client, http_server, capsys):
    http_server.expect("/v1/chat/completions", Reply(status=500, body={"error": {"message": PAYLOAD}}),
                       Reply(body=openai_reply('{"ok": true}')))
    client = make_client("openai", env={"KBINDEX_OPENAI_BASE_URL": f"{http_server.url}/v1"}, model="m")
    result = client.structured("doctor", [{"role": "user", "content": "hi"}], SCHEMA, max_tokens=8)
    assert result.data == {"ok": True} and result.attempts == 2
    err = capsys.readouterr().err
    assert "retry 1/2" in err and "boom" in err
    assert_clean(err)


def test_a_cache_write_failure_message_is_terminal_safe(empty_kb, capsys):
    conn = empty_kb.conn
    # A real SQLite error whose text carries escape sequences: a trigger naming a table that does not exist.
    conn.execute('CREATE TEMP TRIGGER poison BEFORE INSERT ON main.llm_cache '
                 f'BEGIN INSERT INTO "x{PAYLOAD}" VALUES (1); END')
    stored = llm_cache.put(conn, "k", backend="b", model="m", task="t", prompt_hash="p", schema_hash="s",
                           response={"ok": True})
    assert stored is False
    err = capsys.readouterr().err
    assert "could not cache the LLM answer" in err
    assert_clean(err)


def test_mcp_start_errors_are_terminal_safe(run, tmp_path):
    res = run("mcp", "--db", tmp_path / f"no{PAYLOAD}where" / "kbindex.db")
    assert res.returncode == 1
    assert "Error:" in res.stderr
    assert_clean(res.stderr)


