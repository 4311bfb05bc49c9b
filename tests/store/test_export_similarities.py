"""`kbindex export-similarities` / KnowledgeBase.export_similarities: the relations in the editable
similarities.json format. Round trip: export -> import-similarities into an empty index -> export
again gives the same file. By default only what files, `relate` and `import-similarities` wrote (with
their scores); `--learned` adds learned relations and learned score changes."""

from __future__ import annotations

import json

import pytest

from kb_indexer.api import KnowledgeBase
from kb_indexer.learn.history import record

FIELDS = ["keyword1", "keyword2", "type", "context", "score", "directional"]


def _fresh(tmp_path, name="fresh"):
    root = tmp_path / name
    (root / "knowledge-base").mkdir(parents=True)
    handle, _ = KnowledgeBase.init(root / "kbindex.db", root / "knowledge-base")
    return handle


def _round_trip(kb, tmp_path, learned=False):
    first = kb.export_similarities(learned=learned)
    path = tmp_path / ("learned.json" if learned else "sims.json")
    path.write_text(json.dumps(first), encoding="utf-8")
    with _fresh(tmp_path, "fresh-learned" if learned else "fresh") as other:
        imported = other.import_similarities(str(path))
        again = other.export_similarities(learned=learned)
    assert imported["imported"] == imported["created"] == len(first["similarities"])
    return first, again


def _pairs(data):
    return {(e["keyword1"].lower(), e["keyword2"].lower(), e["type"]) for e in data["similarities"]}


def test_bundled_relations_round_trip_exactly(kb, tmp_path, project):
    first, again = _round_trip(kb, tmp_path)
    assert again == first
    bundled = json.loads((project / "similarities.json").read_text(encoding="utf-8"))["similarities"]
    assert len(first["similarities"]) == len(bundled) == 72
    assert all(list(e) == FIELDS for e in first["similarities"])
    # The same relations as the file, directional ones read keyword1 -> keyword2 as the file wrote them.
    def key(e):
        pair = (e["keyword1"].lower(), e["keyword2"].lower())
        return (pair if e["directional"] else tuple(sorted(pair))), e["type"], e["context"], e["score"]
    assert sorted(map(key, first["similarities"])) == sorted(map(key, bundled))


def test_person_relations_are_exported_and_unrelated_ones_are_not(kb, tmp_path):
    kb.relate("Monte Carlo", "MCTS", "related_concept", "In game-tree search, Monte Carlo rollouts are what MCTS runs",
              0.8, directional=True)
    kb.unrelate("RL", "reinforcement learning")
    first, again = _round_trip(kb, tmp_path)
    assert again == first
    entry = next(e for e in first["similarities"] if e["keyword1"] == "Monte Carlo")
    assert entry == {"keyword1": "Monte Carlo", "keyword2": "MCTS", "type": "related_concept",
                     "context": "In game-tree search, Monte Carlo rollouts are what MCTS runs", "score": 0.8,
                     "directional": True}
    assert ("rl", "reinforcement learning", "abbreviation") not in _pairs(first)
    assert ("reinforcement learning", "rl", "abbreviation") not in _pairs(first)


def _learn_relation_and_score(kb):
    """Two successful queries using "alphago" and "monte carlo tree search" together (a learned
    relation) and two not-helpful results reached through the RL abbreviation (a learned score change)."""
    rel_id, score = kb.conn.execute(
        "SELECT s.id, s.score FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 "
        "JOIN keywords b ON b.id = s.keyword_id_2 WHERE s.similarity_type = 'abbreviation' AND "
        "'rl' IN (a.keyword, b.keyword) AND 'reinforcement learning' IN (a.keyword, b.keyword)").fetchone()
    for q in ("first", "second"):
        qid = kb.query(q, ["alphago", "game AI"])["query_id"]
        kb.learning.feedback(qid, ["alphago-architecture.md"], [])
        rows = [{"filepath": "experience-based-learning.md", "relevance_score": 1.0, "matched_keywords": ["rl"],
                 "sources": ["expansion"]}]
        exp = [{"user_keyword": "reinforcement learning", "keyword": "rl", "relation_id": rel_id,
                "path": [rel_id], "weight": 1.0}]
        qid, _ = record(kb.conn, f"{q} rl", None, keywords=["reinforcement learning"], expand_depth=1,
                        threshold=0.3, method="hybrid", results=rows, expansions=exp,
                        options={"keywords_from": "given"})
        kb.learning.feedback(qid, [], ["experience-based-learning.md"])
    result = kb.learning.learn()
    assert [s for s in result["suggestions"] if s["kind"] == "score"], result["suggestions"]
    assert [s for s in result["suggestions"] if s["kind"] == "similarity"], result["suggestions"]
    adjusted = kb.conn.execute("SELECT score FROM keyword_similarities WHERE id = ?", (rel_id,)).fetchone()[0]
    assert adjusted < score
    return score, adjusted


def _rl_score(data):
    return next(e["score"] for e in data["similarities"] if {e["keyword1"].lower(), e["keyword2"].lower()}
                == {"rl", "reinforcement learning"} and e["type"] == "abbreviation")


def test_learned_relations_and_scores_only_with_learned(kb, tmp_path):
    original, adjusted = _learn_relation_and_score(kb)
    plain = kb.export_similarities()
    full = kb.export_similarities(learned=True)
    learned_pairs = _pairs(full) - _pairs(plain)
    assert learned_pairs, "a learned relation is exported with --learned only"
    assert all("game ai" in p[:2] or "alphago" in p[:2] for p in learned_pairs), learned_pairs
    assert _rl_score(plain) == original and _rl_score(full) == pytest.approx(adjusted)
    for learned in (False, True):
        first, again = _round_trip(kb, tmp_path, learned=learned)
        assert again == first


def test_cli_writes_stdout_or_a_file_and_import_reads_it_back(tmp_path, project, run):
    db = project / "kbindex.db"
    assert run("init", "--db", db, "--kb", project / "knowledge-base", cwd=project).returncode == 0
    assert run("sync", "--db", db, cwd=project).returncode == 0
    out = run("export-similarities", "--db", db, cwd=project)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.startswith('{"similarities": [\n  {"keyword1": ')   # one entry per line
    assert len(out.json()["similarities"]) == 72
    target = tmp_path / "exported.json"
    res = run("export-similarities", "--output", target, "--db", db, "--format", "json", cwd=project)
    assert res.returncode == 0 and res.json() == {"output": str(target), "similarities": 72, "learned": False}
    assert target.read_text(encoding="utf-8") == out.stdout
    fresh = tmp_path / "fresh.db"
    assert run("init", "--db", fresh, "--kb", tmp_path / "nokb", cwd=tmp_path).returncode == 0
    assert run("import-similarities", target, "--db", fresh, cwd=tmp_path).returncode == 0
    again = run("export-similarities", "--learned", "--db", fresh, cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == out.stdout


def test_cli_unwritable_output_is_a_json_error(project, run, tmp_path):
    db = project / "kbindex.db"
    assert run("init", "--db", db, "--kb", project / "knowledge-base", cwd=project).returncode == 0
    res = run("export-similarities", "--output", tmp_path / "missing" / "x.json", "--db", db, "--format", "json",
              cwd=project)
    assert res.returncode == 1 and res.stdout == "" and "Cannot write" in res.error()["message"]


def test_empty_index_exports_an_empty_list(empty_kb):
    assert empty_kb.export_similarities() == {"similarities": []}
