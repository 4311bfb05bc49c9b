"""Re-reading a similarities file applies only its changed entries; import restores the synced state."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.both_engines


def _sims(project):
    return project / "similarities.json"


def _edit_other_entry(project):
    path = _sims(project)
    data = json.loads(path.read_text())
    entry = next(e for e in data["similarities"]
                 if {e["keyword1"].lower(), e["keyword2"].lower()} != {"rl", "reinforcement learning"})
    entry["score"] = 0.33 if entry["score"] != 0.33 else 0.34
    path.write_text(json.dumps(data))


def _rl(kb):
    return [s for s in kb.similar("RL")["similar_keywords"]
            if s["keyword"].lower() == "reinforcement learning" and s["similarity_type"] == "abbreviation"]


def test_relate_and_unrelate_survive_edits_of_other_entries(kb, project):
    kb.relate("RL", "reinforcement learning", "abbreviation", "a person's context", 0.42)
    _edit_other_entry(project)
    res = kb.sync()
    assert res["similarities"]["files"] == 1
    (rel,) = _rl(kb)
    assert rel["score"] == 0.42 and rel["context"] == "a person's context"
    kb.unrelate("RL", "reinforcement learning", "abbreviation")
    _edit_other_entry(project)
    kb.sync()
    assert _rl(kb) == []


def test_a_changed_entry_is_applied(kb, project):
    kb.relate("RL", "reinforcement learning", "abbreviation", "a person's context", 0.42)
    path = _sims(project)
    data = json.loads(path.read_text())
    entry = next(e for e in data["similarities"]
                 if {e["keyword1"].lower(), e["keyword2"].lower()} == {"rl", "reinforcement learning"})
    entry["score"] = 0.95
    path.write_text(json.dumps(data))
    kb.sync()
    assert _rl(kb)[0]["score"] == 0.95  # the file's new value: a person edited the file last


def test_import_of_an_export_is_not_stale_and_keeps_manual_values(kb, project):
    kb.relate("RL", "reinforcement learning", "abbreviation", "mine", 0.3)
    dump = kb.export()
    kb.import_(dump, force=True)
    assert kb.stale().get("stale") is False, kb.stale()
    res = kb.sync()
    assert res["similarities"]["files"] == 0 and res["similarities"]["unchanged_files"] == 1
    assert _rl(kb)[0]["score"] == 0.3
    assert kb.export() == dump
