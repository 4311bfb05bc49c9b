"""A relation a person deleted stays deleted: no similarities file brings it back, until a person says so."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.both_engines


def _rl(kb):
    return [s for s in kb.similar("RL")["similar_keywords"]
            if s["keyword"].lower() == "reinforcement learning" and s["similarity_type"] == "abbreviation"]


def test_a_restored_or_edited_file_does_not_bring_back_an_unrelated_relation(kb, project):
    path = project / "similarities.json"
    saved = path.read_bytes()
    kb.unrelate("RL", "reinforcement learning", "abbreviation")
    path.unlink()
    kb.sync(force=True)
    path.write_bytes(saved)
    res = kb.sync()
    assert res["similarities"]["files"] == 1
    assert _rl(kb) == []
    data = json.loads(saved)
    for e in data["similarities"]:
        if {e["keyword1"].lower(), e["keyword2"].lower()} == {"rl", "reinforcement learning"}:
            e["score"] = 0.77  # the entry itself changes
    path.write_text(json.dumps(data))
    kb.sync()
    assert _rl(kb) == []
    others = kb.conn.execute("SELECT COUNT(*) FROM keyword_similarities").fetchone()[0]
    assert others == len(data["similarities"]) - 1


def test_relate_or_import_similarities_lifts_the_tombstone(kb, project):
    kb.unrelate("RL", "reinforcement learning", "abbreviation")
    kb.relate("RL", "reinforcement learning", "abbreviation", "mine again", 0.5)
    assert _rl(kb)[0]["context"] == "mine again"
    assert kb.conn.execute("SELECT COUNT(*) FROM similarity_tombstones").fetchone()[0] == 0
    kb.unrelate("RL", "reinforcement learning", "abbreviation")
    kb.import_similarities(str(project / "similarities.json"))
    assert len(_rl(kb)) == 1
    kinds = {r[0] for r in kb.conn.execute("SELECT origin_kind FROM keyword_similarities")}
    assert kinds == {"import"}  # import-similarities wrote every relation's values last
    assert kb.conn.execute("SELECT COUNT(*) FROM similarity_tombstones").fetchone()[0] == 0
