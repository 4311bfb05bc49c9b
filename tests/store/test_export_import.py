"""Export and import: clear errors, required ids, normalised keywords, similarity file listings."""

from __future__ import annotations

import json

import pytest

from kb_indexer.api import KnowledgeBase


# -- lesser: export / import ---------------------------------------------------------------------------------

@pytest.fixture
def indexed(kb):
    kb.query("reinforcement learning")
    return kb


def _import(cli, tmp_path, data):
    other = tmp_path / "other"
    other.mkdir(exist_ok=True)
    (other / "x.json").write_text(json.dumps(data), encoding="utf-8")
    db = other / "kbindex.db"
    if not db.exists():
        assert cli("init", "--db", str(db), "--kb", str(other)).exit_code == 0
    return cli("import", str(other / "x.json"), "--force", "-f", "json", "--db", str(db))


def _error(res):
    return json.loads(res.stderr)["error"]


def test_export_to_a_missing_folder_is_a_clear_error(indexed, cli, tmp_path):
    res = cli("export", "--output", str(tmp_path / "no" / "such" / "x.json"), "-f", "json",
              "--db", str(indexed.db_path))
    assert res.exit_code == 1 and res.stdout == ""
    assert _error(res)["code"] == "write_failed" and "Cannot write" in _error(res)["message"]


@pytest.mark.parametrize("table", ["documents", "keywords", "keyword_similarities", "queries", "similarity_files"])
def test_import_requires_ids(indexed, cli, tmp_path, table):
    data = indexed.export()
    row = data["tables"][table][0]
    del row["id" if "id" in row else "similarity_id"]
    res = _import(cli, tmp_path, data)
    assert res.exit_code == 1, res.stderr
    assert _error(res)["code"] == "invalid_input" and "lacks:" in _error(res)["message"]


def test_import_refuses_unnormalised_keywords(indexed, cli, tmp_path):
    data = indexed.export()
    row = data["tables"]["keywords"][0]
    row["keyword"] = "  Reinforcement   LEARNING "
    res = _import(cli, tmp_path, data)
    assert res.exit_code == 1 and "not normalised" in _error(res)["message"]
    row["keyword"] = "a keyword no other row has"
    assert _import(cli, tmp_path, data).exit_code == 0


def test_export_import_roundtrip_keeps_similarity_file_listings(indexed, cli, tmp_path):
    data = indexed.export()
    assert data["tables"]["similarity_files"]
    assert _import(cli, tmp_path, data).exit_code == 0
    again = KnowledgeBase.open(tmp_path / "other" / "kbindex.db")
    try:
        assert again.export()["tables"]["similarity_files"] == data["tables"]["similarity_files"]
    finally:
        again.close()
