"""A SKILL.md's front matter with YAML's `.inf`/`-.inf`/`.nan` gives metadata that is valid JSON (null:
`skills show --format json` never prints `Infinity`); keys that are one key once read (`1` and `true`)
or once made text (`1` and `"1"`) are reported by `skills sync`, not silently collapsed."""

from __future__ import annotations

import json


def _skill(root, name, extra):
    (root / name).mkdir(parents=True)
    (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n{extra}\n---\nBody.\n",
                                          encoding="utf-8")


def test_infinite_numbers_are_null_and_colliding_keys_are_reported(cli, tmp_path):
    from kb_indexer.api import KnowledgeBase

    root = tmp_path / "skills"
    _skill(root, "weights", "w: .inf\nv: -.inf\nn: .nan\nok: 1.5")
    _skill(root, "bool-key", "m: {1: a, true: e}")
    _skill(root, "text-key", 'm: {1: a, "1": e}')
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", tmp_path / "kb")
    handle.close()
    db = tmp_path / "kbindex.db"
    out = json.loads(cli("skills", "sync", root, "--db", db, "--format", "json").stdout)
    assert out["added"] == ["weights"]
    errors = {e["file"].split("/")[-2]: e["message"] for e in out["errors"]}
    assert sorted(errors) == ["bool-key", "text-key"]
    assert "same key once read" in errors["bool-key"] and "one key as text" in errors["text-key"]
    res = cli("skills", "show", "weights", "--db", db, "--format", "json")
    assert res.exit_code == 0
    shown = json.loads(res.stdout, parse_constant=lambda c: f"invalid JSON constant {c}")
    assert shown["metadata"] == {"w": None, "v": None, "n": None, "ok": 1.5}
