"""`kbindex enrich`: generated keywords are merged into keywords files without losing a person's, refresh
when the document changes, and nothing is written on a dry run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import kw, write_doc
from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import KbError

DOCS = {
    "rl.md": "# Reinforcement learning\n\nReinforcement Learning (RL) trains agents with rewards. Policy gradients "
             "and Q-learning are RL families; gymnasium provides environments for agents.\n",
    "search.md": "# Tree search\n\nMonte Carlo tree search (MCTS) explores game trees with random rollouts. "
                 "AlphaGo combined MCTS with neural networks and rollouts.\n",
    "llm.md": "# Language models\n\nLarge Language Models (LLM) predict tokens. Transformers and attention power "
              "every LLM; fine-tuning adapts them.\n",
}


@pytest.fixture
def kbase(tmp_path):
    root = tmp_path / "knowledge-base"
    for rel, text in DOCS.items():
        write_doc(root, rel, text)
    write_doc(root, "mine.md", DOCS["search.md"].replace("Tree search", "My notes"),
              kw("My own summary", "mcts", "Game Trees", categories={"primary": ["mcts"]}, title="Mine"))
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    assert handle.sync()["errors"] == []
    yield handle
    handle.close()


def _file(kb, rel: str) -> dict:
    return json.loads((kb.kb_root / rel).with_suffix(".keywords.json").read_text(encoding="utf-8"))


def _sources(kb, rel: str) -> dict[str, str]:
    doc = kb.conn.execute("SELECT id FROM documents WHERE filepath = ?", (rel,)).fetchone()[0]
    return {r[0]: r[1] for r in kb.conn.execute(
        "SELECT k.keyword, dk.source FROM document_keywords dk JOIN keywords k ON k.id = dk.keyword_id "
        "WHERE dk.document_id = ?", (doc,))}


def test_enrich_writes_marked_keywords_and_indexes_them(kbase):
    out = kbase.enrich.documents(all_=True, use_llm=False)
    assert out["enriched"] == 4 and out["failed"] == 0 and out["methods"]["statistical"] == 4
    assert out["llm"]["used"] is False and out["llm"]["reason"] == "--no-llm"
    data = _file(kbase, "rl.md")
    assert data["generated"]["method"] == "statistical" and data["generated"]["fallback"] == "--no-llm"
    assert set(data["generated"]["keywords"]) == set(data["keywords"]) and len(data["keywords"]) >= 10
    assert "RL" in data["categories"]["abbreviations"]
    assert set(_sources(kbase, "rl.md").values()) == {"generated"}
    assert kbase.search(["RL"])["results"][0]["filepath"] == "rl.md"


def test_merging_never_loses_a_human_keyword_title_or_summary(kbase):
    kbase.enrich.documents(["mine.md"], use_llm=False)
    data = _file(kbase, "mine.md")
    assert data["keywords"][:2] == ["mcts", "Game Trees"] and data["categories"]["primary"][0] == "mcts"
    assert data["title"] == "Mine" and data["summary"] == "My own summary"
    assert "mcts" not in [k.lower() for k in data["generated"]["keywords"]]  # the person's spelling stays
    sources = _sources(kbase, "mine.md")
    assert sources["mcts"] == "file" and sources["game trees"] == "file"
    assert "generated" in sources.values()
    # a person adds a keyword and adopts a generated one; a forced re-run keeps both
    adopted = data["generated"]["keywords"][0]
    data["keywords"].append("rollout policy")
    data["generated"]["keywords"].remove(adopted)
    (kbase.kb_root / "mine.keywords.json").write_text(json.dumps(data), encoding="utf-8")
    kbase.enrich.documents(["mine.md"], use_llm=False, force=True)
    again = _file(kbase, "mine.md")
    for k in ("mcts", "Game Trees", "rollout policy", adopted):
        assert k in again["keywords"] and k not in again["generated"]["keywords"]


def test_a_persons_categories_keep_their_order_and_an_empty_one_stays(tmp_path):
    """enrich rebuilt the categories from the keywords: a person's empty `"gear": []` was dropped."""
    root = tmp_path / "knowledge-base"
    write_doc(root, "mine.md", DOCS["rl.md"], kw("s", "policy gradients", categories={"gear": [],
                                                                                     "methods": ["policy gradients"]}))
    handle, _ = KnowledgeBase.init(tmp_path / "kbindex.db", root)
    assert handle.sync()["errors"] == []
    handle.enrich.documents(["mine.md"], use_llm=False)
    cats = _file(handle, "mine.md")["categories"]
    assert list(cats)[:2] == ["gear", "methods"] and cats["gear"] == [] and cats["methods"] == ["policy gradients"]
    data = _file(handle, "mine.md")
    made = set(data["generated"]["categories"])
    assert made and not made & {"gear", "methods"}
    data["categories"]["gear"] = [data["generated"]["keywords"][0]]   # a generated keyword filed in gear
    (handle.kb_root / "mine.keywords.json").write_text(json.dumps(data), encoding="utf-8")
    handle.enrich.documents(["mine.md"], use_llm=False, force=True)   # gear is the person's: it stays
    again = _file(handle, "mine.md")["categories"]
    assert "gear" in again and list(again)[:2] == ["gear", "methods"]
    handle.close()


def test_front_matter_keywords_are_kept_as_a_persons(tmp_path):
    root = tmp_path / "kb"
    write_doc(root, "fm.md", "---\ntitle: Front\nkeywords: [alpha, beta]\n---\n# Heading\n\nGamma rays and "
                             "delta waves meet epsilon noise.\n")
    with KnowledgeBase.init(tmp_path / "kbindex.db", root)[0] as kb:
        kb.sync()
        kb.enrich.documents(["fm.md"], use_llm=False)
        data = _file(kb, "fm.md")
        assert data["keywords"][:2] == ["alpha", "beta"] and data["title"] == "Front"
        assert _sources(kb, "fm.md")["alpha"] == "file"


def test_generated_keywords_refresh_when_the_document_changes(kbase):
    kbase.enrich.documents(all_=True, use_llm=False)
    again = kbase.enrich.documents(all_=True, use_llm=False)
    assert again["unchanged"] == 4  # resumable: done documents are skipped
    assert {d["reason"] for d in again["documents"] if d["action"] == "unchanged"} == {
        "enriched as it is now (by the statistical extractor; --force writes it again)"}   # how, and how to redo
    before = _file(kbase, "mine.md")
    doc = kbase.kb_root / "mine.md"
    doc.write_text("# My notes\n\nQuantum annealing and qubits replace rollouts in this note about annealing.\n",
                   encoding="utf-8")
    out = kbase.enrich.sync(use_llm=False)
    assert out["updated"] == 1
    assert [d["filepath"] for d in out["enrich"]["documents"] if d["action"] == "enriched"] == ["mine.md"]
    after = _file(kbase, "mine.md")
    assert after["keywords"][:2] == ["mcts", "Game Trees"]          # the person's keywords stay
    assert "annealing" in after["generated"]["keywords"]
    assert after["generated"]["keywords"] != before["generated"]["keywords"]
    assert "annealing" in _sources(kbase, "mine.md")


def test_sync_enrich_enriches_new_documents_only_once(kbase):
    write_doc(kbase.kb_root, "new.md", "# New\n\nSpacecraft telemetry and orbital mechanics for satellites.\n")
    out = kbase.enrich.sync(use_llm=False)
    enriched = sorted(d["filepath"] for d in out["enrich"]["documents"] if d["action"] == "enriched")
    assert enriched == ["llm.md", "new.md", "rl.md", "search.md"]    # mine.md has a person's keywords
    again = kbase.enrich.sync(use_llm=False)
    assert again["enrich"]["enriched"] == 0


def test_dry_run_writes_nothing(kbase):
    db_before = {r[0]: r[1] for r in kbase.conn.execute("SELECT filepath, content_hash FROM documents")}
    files_before = sorted(p.name for p in kbase.kb_root.iterdir())
    mine_before = (kbase.kb_root / "mine.keywords.json").read_bytes()
    out = kbase.enrich.documents(all_=True, dry_run=True, use_llm=False)
    assert out["would_enrich"] == 4 and out["enriched"] == 0 and out["written"] is False
    assert any(d["generated_keywords"] for d in out["documents"])
    assert sorted(p.name for p in kbase.kb_root.iterdir()) == files_before
    assert (kbase.kb_root / "mine.keywords.json").read_bytes() == mine_before
    assert {r[0]: r[1] for r in kbase.conn.execute("SELECT filepath, content_hash FROM documents")} == db_before
    assert kbase.conn.execute("SELECT count(*) FROM document_keywords WHERE source = 'generated'").fetchone()[0] == 0


def test_no_write_indexes_without_touching_files(kbase):
    files_before = sorted(p.name for p in kbase.kb_root.iterdir())
    out = kbase.enrich.documents(["rl.md"], write=False, use_llm=False)
    assert out["enriched"] == 1 and out["documents"][0]["keywords_file"] is None
    assert sorted(p.name for p in kbase.kb_root.iterdir()) == files_before
    assert "rl" in _sources(kbase, "rl.md")


def test_paths_outside_the_root_are_refused_and_a_broken_file_is_skipped(kbase, tmp_path):
    outside = write_doc(tmp_path, "outside.md", "# Out\n\nNot in the knowledge base.\n")
    with pytest.raises(KbError) as err:
        kbase.enrich.documents([str(outside)], use_llm=False)
    assert err.value.code == "outside_kb"
    (kbase.kb_root / "llm.keywords.json").write_text("{broken", encoding="utf-8")
    out = kbase.enrich.documents(all_=True, use_llm=False)
    failed = [d for d in out["documents"] if d["action"] == "failed"]
    assert [d["filepath"] for d in failed] == ["llm.md"] and out["enriched"] == 3
    assert (kbase.kb_root / "llm.keywords.json").read_text(encoding="utf-8") == "{broken"


def test_cli_enrich_dry_run_json(kbase, cli):
    res = cli("enrich", "rl.md", "--dry-run", "--no-llm", "--db", kbase.db_path, "--kb", kbase.kb_root,
              "--format", "json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["would_enrich"] == 1 and out["documents"][0]["method"] == "statistical"
    assert not (kbase.kb_root / "rl.keywords.json").exists()
    res = cli("enrich", "--db", kbase.db_path, "--kb", kbase.kb_root, "--format", "json")
    assert res.exit_code == 2 and "--all" in res.stderr
