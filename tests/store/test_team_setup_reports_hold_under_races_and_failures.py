"""What a team's set-up commands report holds: of several `init`s racing on one new PostgreSQL database exactly
one says it created the index; `doctor` does not say an index exists on a server it could not reach; `update`
of a file outside the knowledge-base root is refused as `add` refuses it (it said to use `add`)."""

from __future__ import annotations

import threading

import pytest


def test_one_of_several_racing_inits_created_the_index(pg_url, project):
    pytest.importorskip("psycopg")
    from kb_indexer.api import KnowledgeBase

    results, errors = [], []

    def init() -> None:
        try:
            handle, result = KnowledgeBase.init(pg_url, project / "knowledge-base")
            handle.close()
            results.append(result["created"])
        except Exception as exc:   # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=init) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [] and sorted(results) == [False, False, False, True]


def test_doctor_does_not_claim_an_index_on_a_server_it_cannot_reach(run):
    res = run("doctor", "--db", "postgresql://agent@127.0.0.1:1/kb?connect_timeout=2", "--format", "json",
              env={"KBINDEX_LLM_BACKEND": "none"})
    database = res.json()["database"]
    assert database["exists"] is None and database["error"]


def test_update_of_a_file_outside_the_root_is_outside_kb(kb, run, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "x.md").write_text("# X\n", encoding="utf-8")
    res = run("update", "notes/x.md", "--db", kb.db_path, "--format", "json", cwd=tmp_path)
    assert res.returncode == 1 and res.error()["code"] == "outside_kb"
