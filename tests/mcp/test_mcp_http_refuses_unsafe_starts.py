"""`kbindex mcp` refuses, at start and as bad usage (exit 2, a clear message on stderr, nothing on stdout),
what would serve the index unsafely or not as asked: a non-loopback bind without a token, a token file
other users may read, a token too short, a token file that is not a list of named tokens, a token on the
command line, an unknown transport, http options with stdio."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import REPO, kbindex_exe
from tests.mcp_http_server import TOKEN


def _mcp(db, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*kbindex_exe(), "mcp", "--db", str(db), *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def _bad_usage(proc: subprocess.CompletedProcess, *said: str) -> None:
    assert proc.returncode == 2, proc.stderr[-800:]
    assert proc.stdout == ""
    for text in said:
        assert text in proc.stderr, proc.stderr[-800:]
    assert "internal" not in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "kb.example.com"])
def test_a_non_loopback_bind_without_a_token_is_refused(kb, host):
    _bad_usage(_mcp(kb.db_path, "--transport", "http", "--host", host), f"--host {host}", "KBINDEX_MCP_TOKEN",
               "--token-file")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o644], ids=oct)
def test_a_token_file_other_users_may_read_or_change_is_refused(kb, tmp_path, mode):
    path = tmp_path / "mcp-token"
    path.write_text(TOKEN, encoding="utf-8")
    path.chmod(mode)
    _bad_usage(_mcp(kb.db_path, "--transport", "http", "--host", "0.0.0.0", "--token-file", str(path)),
               "--token-file", f"mode {mode:o}", "chmod 600")


def test_a_missing_token_file_is_bad_usage(kb, tmp_path):
    _bad_usage(_mcp(kb.db_path, "--transport", "http", "--token-file", str(tmp_path / "absent")),
               "--token-file", "cannot be read")


@pytest.mark.parametrize("token", ["short", "has a space in it somewhere", "tab\tinside-the-token-text"])
def test_a_token_too_short_or_not_a_header_value_is_bad_usage(kb, token):
    proc = _mcp(kb.db_path, "--transport", "http", env={"KBINDEX_MCP_TOKEN": token})
    _bad_usage(proc, "KBINDEX_MCP_TOKEN", "secrets.token_urlsafe")
    assert token not in proc.stderr


NAMED = "ann-token-" + "Qa7z" * 8


@pytest.mark.parametrize("text,said", [
    (f"ann:{NAMED}\nbob:{NAMED}\n", "the same token is given twice"),
    (f"ann bee:{NAMED}\n", "name (before the colon)"),
    (f":{NAMED}\n", "name (before the colon)"),
    ("ann:short-token\n", "at least 16 characters"),
    ("# only a comment\n\n", "no token in it"),
])
def test_a_token_file_that_is_not_named_tokens_is_bad_usage(kb, tmp_path, text, said):
    path = tmp_path / "mcp-tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    proc = _mcp(kb.db_path, "--transport", "http", "--token-file", str(path))
    _bad_usage(proc, "--token-file", said)
    assert NAMED not in proc.stderr


def test_the_token_is_never_taken_from_the_command_line(kb):
    proc = _mcp(kb.db_path, "--transport", "http", "--token", TOKEN)
    _bad_usage(proc, "No such option")


def test_an_unknown_transport_is_bad_usage(kb):
    _bad_usage(_mcp(kb.db_path, "--transport", "bogus"), "--transport", "'bogus' is not one of")


@pytest.mark.parametrize("option", [["--host", "127.0.0.1"], ["--port", "9000"], ["--token-file", "t"]])
def test_http_options_with_stdio_are_bad_usage(kb, option):
    _bad_usage(_mcp(kb.db_path, *option), f"Invalid value for '{option[0]}'", "--transport http only")
