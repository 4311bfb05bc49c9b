"""A PostgreSQL URL's password never reaches an error message, even where libpq quotes the URL, with its scheme
in capitals, or a piece of it it cannot parse (``invalid percent-encoded token: "S3cret%zzPW"``)."""

from __future__ import annotations

import pytest

from kb_indexer.config import redact_message

URLS = ["POSTGRESQL://alice:S3cretPW@127.0.0.1:1/kb", "Postgres://alice:S3cretPW@127.0.0.1:1/kb",
        "postgresql://alice:S3cretPW@[::1/kb", "postgresql://alice:S3cret%zzPW@127.0.0.1:1/kb",
        "postgresql://alice:S3cretPW@127.0.0.1:1/kb", "postgresql://alice@127.0.0.1:1/kb?password=S3cretPW"]


@pytest.mark.parametrize("url", URLS)
def test_the_command_line_hides_the_password(run, tmp_path, url):
    res = run("list-docs", "--format", "json", cwd=tmp_path, env={"KBINDEX_DB": url})
    assert res.returncode == 1 and res.error()["code"] in ("io_error", "bad_database", "not_initialised")
    assert "S3cret" not in res.stdout + res.stderr and "***" in res.stderr


def test_a_message_loses_every_form_of_the_password():
    url = "postgresql://alice:S3cret%21PW@host/kb?sslmode=require&password=Other"
    text = 'bad "S3cret%21PW", "S3cret!PW", "Other", postgresql://alice:S3cret%21PW@host/kb'
    out = redact_message(text, url)
    assert "S3cret" not in out and "Other" not in out and out.count("***") == 4
    assert redact_message("no password here", "postgresql://alice@host/kb") == "no password here"
