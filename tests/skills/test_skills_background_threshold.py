"""A message of everyday words is judged against its background (issue 27 item 12: 41% of unseen messages
that need no skill still got one). Measured on the 862 real skills of ``shared/data/skills``: the task-like
messages needing no skill, the development queries, the tuning set with positives, and the three held-out sets
never used for tuning (the third written blind)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SHARED

from kb_indexer.api import KnowledgeBase
from kb_indexer.skills import match

DATA = SHARED / "data" / "skills"
BENCH = REPO / "bench" / "data"
pytestmark = pytest.mark.skipif(not (DATA / "catalog.jsonl").is_file(), reason="shared/data/skills not found")


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open(encoding="utf-8")]


@pytest.fixture(scope="module")
def catalog_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    sys.path.insert(0, str(REPO))
    from bench.skills_eval import write_skills

    root = tmp_path_factory.mktemp("catalog")
    (root / "kb").mkdir()
    skills = write_skills(_load(DATA / "catalog.jsonl"), root)
    handle, _ = KnowledgeBase.init(root / "kbindex.db", root / "kb")
    assert handle.skills.sync([str(skills)])["errors"] == []
    yield handle
    handle.close()


def _evaluate(kb: KnowledgeBase, queries: list[dict[str, Any]]) -> dict[str, Any]:
    from bench.skills_eval import evaluate

    return evaluate(queries, [[m["name"] for m in kb.skills.match(q["query"], use_llm=False)["matched"]]
                              for q in queries])


def test_task_like_messages_needing_no_skill_get_none(catalog_kb: KnowledgeBase) -> None:
    got = _evaluate(catalog_kb, _load(BENCH / "skills_tune_negatives.jsonl"))
    assert got["negatives"] >= 0.9, got["negatives"]          # 0.55 with the threshold alone


def test_held_out_negatives_hold_and_f1_does_not_drop(catalog_kb: KnowledgeBase) -> None:
    got = _evaluate(catalog_kb, _load(BENCH / "skills_heldout.jsonl"))
    assert got["negatives"] >= 0.9, got["negatives"]          # 0.73 with the threshold alone
    assert got["f1"] >= 0.372, got["f1"]                      # F1 of the threshold alone on the same set


def test_development_queries_keep_their_f1(catalog_kb: KnowledgeBase) -> None:
    got = _evaluate(catalog_kb, _load(DATA / "queries_dev.jsonl"))
    assert got["negatives"] == 1.0 and got["f1"] >= 0.49, got


def test_a_distinctive_word_stands_out_from_any_background(catalog_kb: KnowledgeBase) -> None:
    out = catalog_kb.skills.match("what have I watched on trakt this month?", use_llm=False)
    assert [m["name"] for m in out["matched"]] == ["trakt"]
    assert out["background"] > 0


def test_a_catalog_with_fewer_skills_than_the_rank_has_no_background() -> None:
    raw = {i: (1.0 + i, ["w"]) for i in range(match.BACKGROUND_RANK - 1)}
    assert match.background(raw) == 0.0
    raw[99] = (0.5, ["w"])
    assert match.background(raw) == 0.5


@pytest.mark.parametrize("name, before, negatives", [("skills_tune.jsonl", 0.491, 0.85),
                                                     ("skills_heldout2.jsonl", 0.515, 0.9)])
def test_tuning_set_and_second_held_out_set_gain_f1_and_keep_negatives(catalog_kb: KnowledgeBase, name: str,
                                                                       before: float, negatives: float) -> None:
    got = _evaluate(catalog_kb, _load(BENCH / name))
    assert got["f1"] > before, got["f1"]                      # F1 of the matcher before the factors (0.491, 0.5143)
    assert got["negatives"] >= negatives, got["negatives"]    # 15/17 on the tuning set, 32/34 held out


def test_a_third_held_out_set_written_blind_keeps_negatives_and_f1_above_bm25s_first_figure(
        catalog_kb: KnowledgeBase) -> None:
    # written by an agent that read only the catalog (not the matcher, not the other sets); first measured at
    # 346f2a9: keyword F1 0.503, negatives 0.92 (55/60); bm25s (threshold from the dev queries) 0.457 / 0.97 in
    # that run (bench/skills_eval.py): the F1 bound is that bm25s figure, recorded, not recomputed here
    got = _evaluate(catalog_kb, _load(BENCH / "skills_heldout3.jsonl"))
    assert got["negatives"] >= 0.9, got["negatives"]
    assert got["f1"] > 0.457, got["f1"]
