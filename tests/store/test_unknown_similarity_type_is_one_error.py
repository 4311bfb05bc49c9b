"""An unknown similarity type is refused by one rule (kb_indexer.store.similarities.check_similarity_type):
bad usage (exit 2, code ``usage``) wherever it is given as an option, the same message as invalid input
(exit 1) inside a similarities file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_indexer.errors import UsageError
from kb_indexer.store.similarities import SIMILARITY_TYPES

PACKAGE = Path(__file__).resolve().parents[2] / "kb_indexer"
EXPECTED = "one of: " + ", ".join(SIMILARITY_TYPES)
MESSAGE = f"Unknown similarity type 'cousin'; expected {EXPECTED}"


@pytest.fixture
def opts(kb):
    return ["--db", str(kb.db_path), "--kb", str(kb.kb_root)]


@pytest.mark.parametrize("args,message", [
    (["similar", "reinforcement learning", "--type", "cousin"], MESSAGE),
    (["relate", "a", "b", "--type", "cousin", "--context", "c"], MESSAGE),
    (["unrelate", "a", "b", "--type", "cousin"], MESSAGE),
    (["query", "learning", "--types", "synonym,cousin"], MESSAGE),
    (["query", "learning", "--weight", "cousin=0.5"],
     f"Unknown similarity type 'cousin' in weights; expected {EXPECTED}"),
])
def test_every_command_option_is_bad_usage_with_one_message(cli, opts, args, message):
    r = cli(*args, "--format", "json", *opts)
    assert (r.exit_code, r.stdout) == (2, "")
    assert json.loads(r.stderr)["error"] == {"code": "usage", "message": message}


@pytest.mark.parametrize("call", [
    lambda kb: kb.similar("reinforcement learning", sim_type="cousin"),
    lambda kb: kb.relate("a", "b", "cousin", "c"),
    lambda kb: kb.unrelate("reinforcement learning", "rl", "cousin"),
])
def test_the_api_raises_the_same_usage_error(kb, call):
    with pytest.raises(UsageError) as info:
        call(kb)
    assert info.value.message == MESSAGE and info.value.exit_code == 2


def test_a_similarities_file_reports_the_same_message_as_invalid_input(kb, run, tmp_path):
    path = tmp_path / "sims.json"
    path.write_text(json.dumps({"similarities": [
        {"keyword1": "x", "keyword2": "y", "type": "cousin", "context": "c", "score": 0.5}]}), encoding="utf-8")
    r = run("import-similarities", str(path), "--db", str(kb.db_path), "--kb", str(kb.kb_root), "-f", "json")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.error() == {"code": "invalid_input", "message": f"{path}: similarities[0]: {MESSAGE}"}


def test_the_rule_is_written_once():
    places = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if "Unknown similarity type" in p.read_text(encoding="utf-8"))
    assert places == ["store/similarities.py"]
