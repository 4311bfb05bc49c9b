"""`kbindex model status --url` refuses a URL that cannot name a server (a control character, a broken IPv6
host, another scheme, a port out of range, a space) as bad usage, with the rule the LLM settings use, before
anything is probed; a good URL of a server that is not there is reported as not running."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("url, problem", [
    ("http://127.0.0.1:1/\x1b[2J", "control character"),
    ("http://[::1", "IPv6"),
    ("ftp://x", "http or https"),
    ("http://127.0.0.1:99999", "out of range"),
    ("http://a b", "whitespace"),
])
def test_a_bad_url_is_bad_usage(run, cli, url, problem):
    res = run("model", "status", "--url", url, "--format", "json")
    assert res.returncode == 2 and res.stdout == ""
    assert res.error()["code"] == "usage" and problem in res.error()["message"]
    assert cli("model", "status", "--url", url, "--format", "json").exit_code == 2


def test_a_good_url_with_no_server_is_not_running(run):
    res = run("model", "status", "--url", "http://127.0.0.1:1/v1", "--format", "json")
    assert res.returncode == 0 and res.json()["running"] is False and res.json()["hint"]


def test_without_url_it_looks_where_the_openai_backend_would(run):
    """`model serve --port N` says to set KBINDEX_OPENAI_BASE_URL; `model status` and `doctor` then look there, not
    at the default port (where someone else's server may answer)."""
    env = {"KBINDEX_OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    assert run("model", "status", "--format", "json", env=env).json()["url"] == "http://127.0.0.1:1/v1"
    doctor = run("doctor", "--format", "json", env={**env, "KBINDEX_LLM_BACKEND": "none"})
    assert doctor.json()["local_model"]["url"] == "http://127.0.0.1:1/v1"


@pytest.mark.parametrize("backend", ["openai", "none"])
def test_a_password_in_the_server_url_is_never_shown(run, backend):
    env = {"KBINDEX_OPENAI_BASE_URL": "http://user:s3cret@127.0.0.1:1/v1", "KBINDEX_LLM_BACKEND": backend}
    status = run("model", "status", "--format", "json", env=env)
    doctor = run("doctor", "--format", "json", "--no-roundtrip", env=env)
    for res in (status, doctor):
        assert "s3cret" not in res.stdout + res.stderr and "user:***@127.0.0.1:1" in res.stdout
