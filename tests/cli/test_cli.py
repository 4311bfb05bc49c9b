"""The command set on the bundled knowledge base, through the installed command and CliRunner."""

from __future__ import annotations

import json
import re

import pytest


@pytest.fixture
def indexed(project, run):
    assert run("init", "-f", "json", cwd=project).returncode == 0
    res = run("sync", "--format", "json", cwd=project)
    assert res.returncode == 0, res.stderr
    data = res.json()
    assert data["errors"] == [] and data["added"] >= 12
    assert data["similarities"]["imported"] >= 30
    return project


def test_init_sync_search_json_shape(indexed, run):
    res = run("search", "reinforcement learning", "--format", "json", cwd=indexed)
    assert res.returncode == 0 and res.stderr == ""
    data = res.json()
    assert data["query"] == {"keywords": ["reinforcement learning"], "mode": "exact"}
    assert data["count"] == len(data["results"]) > 0
    first = data["results"][0]
    assert set(first) == {"filepath", "title", "summary", "matched_keywords", "user_keywords"}
    assert "reinforcement learning" in first["matched_keywords"]
    assert first["user_keywords"] == ["reinforcement learning"]


def test_search_ranks_by_matched_keywords_then_path(indexed, run):
    data = run("search", "RL", "reinforcement learning", "experience learning", "--or", "-f", "json",
               cwd=indexed).json()
    counts = [len(r["matched_keywords"]) for r in data["results"]]
    assert counts == sorted(counts, reverse=True)
    for a, b in zip(data["results"], data["results"][1:]):
        if len(a["matched_keywords"]) == len(b["matched_keywords"]):
            assert a["filepath"] < b["filepath"]
    paths = [r["filepath"] for r in data["results"]]
    assert "trial-and-error-learning.md" in paths  # tagged only "experience learning"
    assert data["query"]["mode"] == "or"
    both = run("search", "RL", "experience learning", "--and", "-f", "json", cwd=indexed).json()
    assert {r["filepath"] for r in both["results"]} >= {"experience-based-learning.md"}
    assert all(len(r["matched_keywords"]) == 2 for r in both["results"])


def test_show_keywords_docs_stats_similar(indexed, run):
    show = run("show", "ai-llm-vs-reinforcement-learning.md", "-f", "json", cwd=indexed).json()
    assert set(show) >= {"filepath", "title", "summary", "keywords", "created_at", "updated_at"}
    assert all(set(k) == {"keyword", "category"} for k in show["keywords"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", show["created_at"])
    kws = run("keywords", "ai-llm-vs-reinforcement-learning.md", "-f", "json", cwd=indexed).json()
    assert kws["count"] == len(show["keywords"])
    docs = run("docs", "rl", "-f", "json", cwd=indexed).json()
    assert "experience-based-learning.md" in [d["filepath"] for d in docs["documents"]]
    stats = run("stats", "reinforcement learning", "-f", "json", cwd=indexed).json()
    assert stats["document_count"] >= 1 and stats["related_keywords_count"] >= 3
    sim = run("similar", "reinforcement learning", "-f", "json", cwd=indexed).json()
    assert sim["count"] == len(sim["similar_keywords"]) > 0
    item = next(s for s in sim["similar_keywords"] if s["keyword"] == "RL")
    assert item["similarity_type"] == "abbreviation" and item["score"] == 1.0 and item["directional"] is False
    only = run("similar", "reinforcement learning", "--type", "contrast", "-f", "json", cwd=indexed).json()
    assert {s["similarity_type"] for s in only["similar_keywords"]} == {"contrast"}


def test_relate_unrelate_roundtrip(indexed, run):
    res = run("relate", "Monte Carlo", "MCTS", "--type", "related_concept", "--context",
              "In game-tree search, Monte Carlo rollouts are what MCTS runs", "--score", "0.8",
              "--directional", "-f", "json", cwd=indexed)
    assert res.returncode == 0 and res.json()["action"] == "created"
    sim = run("similar", "monte carlo", "-f", "json", cwd=indexed).json()
    assert [s["direction"] for s in sim["similar_keywords"] if s["keyword"] == "MCTS"] == ["outgoing"]
    assert run("unrelate", "monte carlo", "mcts", "-f", "json", cwd=indexed).json()["removed"] == 1
    res = run("unrelate", "monte carlo", "mcts", "-f", "json", cwd=indexed)
    assert res.returncode == 1 and "No relation" in res.error()["message"]


def test_db_stats_list_docs_and_table_output(indexed, run):
    stats = run("db-stats", "-f", "json", cwd=indexed).json()
    assert stats["documents"] >= 12 and stats["similarities"] >= 30
    assert len(stats["similarities_by_type"]) == 9
    listed = run("list-docs", "-f", "json", cwd=indexed).json()
    assert listed["count"] == stats["documents"]
    table = run("list-docs", cwd=indexed)
    assert table.returncode == 0 and "ai-llm-vs-reinforcement-learning.md" in table.stdout


def test_export_import_roundtrip_is_exact(indexed, run, tmp_path):
    run("relate", "x1", "x2", "--type", "broader", "--context", "test", "--directional", cwd=indexed)
    first = run("export", cwd=indexed)
    assert first.returncode == 0
    data = json.loads(first.stdout)
    assert data["tables"]["documents"] and data["tables"]["keyword_similarities"]
    assert all(d["body"] for d in data["tables"]["documents"])
    (tmp_path / "dump.json").write_text(first.stdout)
    other = tmp_path / "other"
    other.mkdir()
    assert run("init", "--kb", str(indexed / "knowledge-base"), cwd=other).returncode == 0
    res = run("import", str(tmp_path / "dump.json"), "-f", "json", cwd=other)
    assert res.returncode == 0, res.stderr
    again = run("export", cwd=other)
    assert json.loads(again.stdout) == data
    # Full-text rows were rebuilt from the exported bodies.
    import sqlite3
    conn = sqlite3.connect(other / "kbindex.db")
    assert conn.execute("SELECT COUNT(*) FROM documents_fts WHERE documents_fts MATCH 'sutton'").fetchone()[0] >= 1
    # Importing into a non-empty index needs --force.
    res = run("import", str(tmp_path / "dump.json"), "-f", "json", cwd=other)
    assert res.returncode == 1 and res.error()["code"] == "not_empty"
    out = tmp_path / "file.json"
    res = run("export", "--output", str(out), "-f", "json", cwd=other)
    assert res.returncode == 0 and json.loads(out.read_text()) == data


def test_db_found_by_walking_up_and_env(indexed, run):
    sub = indexed / "knowledge-base" / "python-tooling"
    res = run("list-docs", "-f", "json", cwd=sub)
    assert res.returncode == 0 and res.json()["count"] >= 12
    res = run("list-docs", "-f", "json", cwd="/", env={"KBINDEX_DB": str(indexed / "kbindex.db")})
    assert res.returncode == 0 and res.json()["count"] >= 12


def test_cli_runner_matches_installed_command(indexed, cli, run, monkeypatch):
    monkeypatch.chdir(indexed)
    res = cli("search", "RL", "--format", "json")
    assert res.exit_code == 0
    assert json.loads(res.stdout) == run("search", "RL", "--format", "json", cwd=indexed).json()
    bad = cli("show", "missing.md", "--format", "json")
    assert bad.exit_code == 1 and bad.stdout == ""
    assert json.loads(bad.stderr)["error"]["code"] == "not_found"
    usage = cli("relate", "a")
    assert usage.exit_code == 2


def test_version_and_module_entry_points(run, tmp_path):
    import subprocess
    import sys

    from kb_indexer import __version__
    assert run("--version").stdout.strip() == f"kbindex {__version__}"
    out = subprocess.run([sys.executable, "-m", "kb_indexer", "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"kbindex {__version__}"
    from tests.conftest import REPO
    out = subprocess.run([sys.executable, str(REPO / "kbindex.py"), "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"kbindex {__version__}"


def test_sync_progress_and_warnings_stay_off_stdout(indexed, run):
    (indexed / "knowledge-base" / "broken.md").write_bytes(b"\xff\xfe bad")
    res = run("sync", "-f", "json", cwd=indexed)
    assert res.returncode == 0
    data = res.json()
    assert data["errors"] == [{"file": "broken.md", "message": data["errors"][0]["message"]}]
    assert "broken.md" in res.stderr
