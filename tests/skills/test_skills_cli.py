"""`kbindex skills ...`: JSON on stdout, errors on stderr with the usual codes and exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture
def setup(tmp_path):
    from kb_indexer.api import KnowledgeBase

    root = tmp_path / "skills"
    for name, desc in {"samsung-smart-tv": "Control Samsung smart TVs: power and volume.",
                       "weather": "Weather forecast for any city."}.items():
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: \"{desc}\"\n---\n# {name}\nBody.\n",
                                              encoding="utf-8")
    (root / "bad").mkdir()
    (root / "bad" / "SKILL.md").write_text("---\nname: bad\n---\n", encoding="utf-8")
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", tmp_path / "kb")
    handle.close()
    return tmp_path / "kbindex.db", root


def test_sync_list_show_match_remove_as_json(cli, setup):
    db, root = setup
    res = cli("skills", "sync", root, "--db", db, "--format", "json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["added"] == ["samsung-smart-tv", "weather"]
    assert [Path(e["file"]).parent.name for e in out["errors"]] == ["bad"]
    assert "bad" in res.stderr and "warning:" in res.stderr   # on stderr under --format json too, as `sync`
    listed = json.loads(cli("skills", "list", "--db", db, "--format", "json").stdout)
    assert listed["count"] == 2 and listed["dirs"][0]["path"] == str(root)
    shown = json.loads(cli("skills", "show", "weather", "--db", db, "--format", "json").stdout)
    assert shown["body"] == "# weather\nBody."
    res = cli("skills", "match", "switch the samsung tv off", "--no-llm", "--db", db, "--format", "json")
    assert res.exit_code == 0
    match = json.loads(res.stdout)
    assert [m["name"] for m in match["matched"]] == ["samsung-smart-tv"]
    assert match["method"] == "keyword" and match["fallback_reason"] is None
    nothing = json.loads(cli("skills", "match", "hello, how are you?", "--no-llm", "--db", db,
                             "--format", "json").stdout)
    assert nothing["matched"] == []
    removed = json.loads(cli("skills", "remove", "weather", "--db", db, "--format", "json").stdout)
    assert removed["action"] == "removed"


def test_unknown_skill_is_not_found_exit_1(cli, setup):
    db, _ = setup
    res = cli("skills", "show", "nope", "--db", db, "--format", "json")
    assert res.exit_code == 1
    assert json.loads(res.stderr)["error"]["code"] == "not_found"


@pytest.mark.parametrize("args", [("match", "tv", "--top", "0"), ("match", "tv", "--min-score", "-1"),
                                  ("sync",)])
def test_bad_usage_exits_2(cli, setup, args):
    db, _ = setup
    res = cli("skills", *args, "--db", db, "--format", "json")
    assert res.exit_code == 2
    assert json.loads(res.stderr)["error"]["code"] == "usage"


def test_missing_directory_is_not_found(cli, setup, tmp_path):
    db, _ = setup
    res = cli("skills", "sync", tmp_path / "nowhere", "--db", db, "--format", "json")
    assert res.exit_code == 1 and json.loads(res.stderr)["error"]["code"] == "not_found"


def test_without_a_backend_the_keyword_result_says_so_without_a_warning(cli, setup):
    db, root = setup
    cli("skills", "sync", root, "--db", db)
    res = cli("skills", "match", "samsung tv", "--db", db, "--format", "json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["method"] == "keyword"
    assert "no LLM backend configured" in out["fallback_reason"]
    assert [m["name"] for m in out["matched"]] == ["samsung-smart-tv"]
    assert "warning:" not in res.stderr   # not configured is not a failure


def test_a_failing_backend_falls_back_with_a_warning(cli, setup, tmp_path, monkeypatch):
    db, root = setup
    cli("skills", "sync", root, "--db", db)
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"error": "unavailable", "message": "no server"}] * 3))
    monkeypatch.setenv("KBINDEX_FAKE_LLM", str(script))
    res = cli("skills", "match", "samsung tv", "--llm-backend", "fake", "--llm-timeout", "5", "--db", db,
              "--format", "json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["method"] == "keyword" and "no server" in out["fallback_reason"]
    assert [m["name"] for m in out["matched"]] == ["samsung-smart-tv"]
    assert "warning:" in res.stderr and "no server" in res.stderr


def test_installed_command_runs_skills(run, setup):
    """Through a real process (this checkout's code first on the path)."""
    db, root = setup
    env = {"PYTHONPATH": str(REPO)}
    assert run("skills", "sync", root, "--db", db, env=env).returncode == 0
    res = run("skills", "match", "weather forecast for Paris", "--no-llm", "--db", db, "--format", "json", env=env)
    assert res.returncode == 0, res.stderr
    assert [m["name"] for m in res.json()["matched"]] == ["weather"]


def test_docs_command_table_lists_every_skills_command_and_option():
    import click
    import typer.main

    from kb_indexer.cli.skills import skills_app

    commands = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    table = commands.split("## Commands", 1)[1].split("\n\n", 2)[1]
    row = next(line for line in table.splitlines() if "`skills sync" in line)
    group = typer.main.get_group(skills_app)
    for name, command in group.commands.items():
        assert f"skills {name}" in row, name
        for param in command.params:
            if isinstance(param, click.Option) and param.name not in ("db", "kb", "format", "llm_backend",
                                                                      "llm_model", "no_cache", "llm_timeout"):
                assert param.opts[0] in row, (name, param.opts[0])
    skills = " ".join((REPO / "docs" / "skills.md").read_text(encoding="utf-8").split())
    assert "not in the installed package" in skills and "`warning: ...`" in skills


def test_load_of_a_session_with_nothing_loaded_says_so_on_stderr(cli, run, setup):
    db, root = setup
    assert cli("skills", "sync", root, "--db", db).exit_code == 0
    assert cli("skills", "match", "hello, how are you?", "--no-llm", "--session", "s1", "--db", db).exit_code == 0
    for res in (cli("skills", "load", "--session", "s1", "--db", db),):
        assert res.exit_code == 0 and res.stdout.strip() == ""
        assert "no skill is loaded in session 's1'" in res.stderr
    out = run("skills", "load", "--session", "s1", "--db", db)
    assert out.returncode == 0 and out.stdout.strip() == "" and "no skill is loaded" in out.stderr
    assert cli("skills", "match", "switch the samsung tv off", "--no-llm", "--session", "s1", "--db", db).exit_code == 0
    loaded = cli("skills", "load", "--session", "s1", "--db", db)
    assert "samsung-smart-tv" in loaded.stdout and "no skill is loaded" not in loaded.stderr


def test_the_table_footer_leaves_out_empty_fields(cli, setup):
    db, root = setup
    assert cli("skills", "sync", root, "--db", db).exit_code == 0
    res = cli("skills", "match", "switch the samsung tv off", "--no-llm", "--db", db)
    assert res.exit_code == 0
    footer = res.stdout.strip().splitlines()[-1]
    assert "method: keyword" in footer and "session:" not in footer and "fallback_reason:" not in footer
