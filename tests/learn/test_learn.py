"""Feedback and learning on small examples, asked through kb.query (see ``ask``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kb_indexer.errors import NotFoundError, UsageError, ValidationError

pytestmark = pytest.mark.both_engines


def ask(kb, question, keywords=None, results=(), expansions=None):
    """Ask through kb.query (the query and its attempt are recorded as `kbindex query` records them).

    ``results`` are the documents the test will mark; a document the query did not return is still
    recorded against this attempt (``not_in_results``), which is all keyword learning needs.
    Only ``expansions`` (which relation led to which document, for score learning) are recorded by
    hand: ``expansions`` maps a result file to [{"relation_id", "original", "expanded"}]; score
    learning through real expansions is tested in tests/learn/test_learn_from_queries.py."""
    if not expansions:
        res = kb.query(question, list(keywords) if keywords else None)
        return res["query_id"], res["attempt_id"]
    from kb_indexer.learn.history import record

    rows, exp = [], []
    for f in results:
        matched = [e["expanded"] for e in expansions.get(f, [])]
        rows.append({"filepath": f, "relevance_score": 1.0, "matched_keywords": matched, "sources": ["keyword"]})
        exp += [{"user_keyword": e["original"], "keyword": e["expanded"], "relation_id": e["relation_id"],
                 "path": [e["relation_id"]], "weight": 1.0} for e in expansions.get(f, [])]
    kws = list(keywords or [])
    return record(kb.conn, question, None, keywords=kws, expand_depth=1, threshold=0.3, method="hybrid",
                  results=rows, expansions=exp, options={"keywords_from": "given" if kws else "question"})


def kinds(result, kind):
    return [s for s in result["suggestions"] if s["kind"] == kind]


def test_feedback_validation_and_attempt_linking(kb):
    qid, aid = ask(kb, "what is alphago", ["alphago"], ["alphago-architecture.md"])
    with pytest.raises(ValidationError, match="Not in the index"):
        kb.learning.feedback(qid, ["nope.md"], [])
    with pytest.raises(NotFoundError):
        kb.learning.feedback(999, ["alphago-architecture.md"], [])
    with pytest.raises(UsageError):
        kb.learning.feedback(qid, [], [])
    with pytest.raises(UsageError, match="both"):
        kb.learning.feedback(qid, ["alphago-architecture.md"], ["alphago-architecture.md"])
    assert kb.conn.execute("SELECT COUNT(*) FROM query_feedback").fetchone()[0] == 0
    res = kb.learning.feedback(qid, ["alphago-architecture.md"], ["supervised-learning-basics.md"], notes="good")
    linked = {r["filepath"]: r["attempt_id"] for r in res["recorded"]}
    assert linked["alphago-architecture.md"] == aid
    assert res["not_in_results"] == ["supervised-learning-basics.md"]
    shown = kb.learning.feedback_show(qid)
    assert {(f["filepath"], f["helpful"]) for f in shown["feedback"]} == {
        ("alphago-architecture.md", True), ("supervised-learning-basics.md", False)}


def test_one_helpful_mark_creates_an_association(kb):
    qid, _ = ask(kb, "How does the Go program combine tree search and networks?", [], ["alphago-architecture.md"])
    kb.learning.feedback(qid, ["alphago-architecture.md"], [])
    res = kb.learning.learn()
    assoc = kinds(res, "association")
    assert len(assoc) == 1 and assoc[0]["filepath"] == "alphago-architecture.md"
    assert assoc[0]["weight"] == 0.5 and "network" in assoc[0]["terms"]
    from kb_indexer.learn.apply import association_boosts
    doc_id = kb.conn.execute("SELECT id FROM documents WHERE filepath = 'alphago-architecture.md'").fetchone()[0]
    boosts = association_boosts(kb.conn, "how does the Go program combine tree search and networks")
    assert boosts[doc_id]["boost"] == pytest.approx(0.5)
    assert association_boosts(kb.conn, "python virtual environments") == {}


def test_not_helpful_lowers_a_learned_association(kb):
    from kb_indexer.learn.apply import association_boosts

    q1, _ = ask(kb, "tree search for board games", [], ["alphago-architecture.md"])
    kb.learning.feedback(q1, ["alphago-architecture.md"], [])
    kb.learning.learn()
    doc_id = kb.conn.execute("SELECT id FROM documents WHERE filepath = 'alphago-architecture.md'").fetchone()[0]
    before = association_boosts(kb.conn, "tree search for board games")[doc_id]["boost"]
    q2, _ = ask(kb, "tree search for board games", [], ["alphago-architecture.md"])
    kb.learning.feedback(q2, [], ["alphago-architecture.md"])
    res = kb.learning.learn()
    assert kinds(res, "association")[0]["action"] == "update"
    after = association_boosts(kb.conn, "tree search for board games")
    assert doc_id not in after or after[doc_id]["boost"] < before


def test_keyword_augmentation_needs_two_queries(kb):
    q1, _ = ask(kb, "q one", ["game tree"], ["alphago-architecture.md"])
    kb.learning.feedback(q1, ["alphago-architecture.md"], [])
    assert kinds(kb.learning.learn(), "keyword") == []
    q2, _ = ask(kb, "q two", ["game tree", "alphago"], ["alphago-architecture.md"])
    kb.learning.feedback(q2, ["alphago-architecture.md"], [])
    res = kb.learning.learn()
    aug = kinds(res, "keyword")
    assert [(s["keyword"], s["filepath"], s["evidence"]) for s in aug] == [("game tree", "alphago-architecture.md", 2)]
    tags = {k["keyword"]: k["source"] for k in kb.keywords("alphago-architecture.md")["keywords"]}
    assert tags["game tree"] == "learned"
    # A learned tag survives re-indexing and is found by search.
    kb.sync()
    assert "alphago-architecture.md" in [r["filepath"] for r in kb.search(["game tree"])["results"]]


def test_keyword_gap_does_not_guess_between_equally_associated_keywords(kb):
    # Two queries search "go engine" and find the same helpful document: each of its keywords is as
    # well associated as the next (only "deep learning" is on another document, which ranks it last),
    # so no gap relation is guessed, while the keyword itself is learned as a tag.
    q1, _ = ask(kb, "a", ["go engine"], ["alphago-architecture.md"])
    kb.learning.feedback(q1, ["alphago-architecture.md"], [])
    q2, _ = ask(kb, "b", ["go engine"], ["alphago-architecture.md"])
    kb.learning.feedback(q2, ["alphago-architecture.md"], [])
    res = kb.learning.learn(dry_run=True)
    gaps = [s for s in kinds(res, "similarity") if "go engine" in (s["keyword1"], s["keyword2"])]
    assert gaps == [], "a gap must link to one best keyword, not guess among equals"
    assert [(s["keyword"], s["filepath"]) for s in kinds(res, "keyword")] == [("go engine", "alphago-architecture.md")]


def test_keyword_gap_picks_shared_keyword_across_documents(kb):
    # "tabular rl" finds two different helpful docs; the keyword they share is the best association.
    q1, _ = ask(kb, "x", ["bootstrapping methods"], ["temporal-difference-learning.md"])
    kb.learning.feedback(q1, ["temporal-difference-learning.md"], [])
    q2, _ = ask(kb, "y", ["bootstrapping methods"], ["policy-gradient-methods.md"])
    kb.learning.feedback(q2, ["policy-gradient-methods.md"], [])
    td = {k["keyword"].lower() for k in kb.keywords("temporal-difference-learning.md")["keywords"]}
    pg = {k["keyword"].lower() for k in kb.keywords("policy-gradient-methods.md")["keywords"]}
    shared = td & pg
    res = kb.learning.learn()
    gaps = [s for s in kinds(res, "similarity") if "bootstrapping methods" in (s["keyword1"], s["keyword2"])]
    assert len(gaps) == 1
    assert gaps[0]["keyword2"] in shared
    assert gaps[0]["evidence"] == 2
    sim = kb.similar("bootstrapping methods")["similar_keywords"]
    assert [s["keyword"].lower() for s in sim] == [gaps[0]["keyword2"]]


def test_cooccurrence_needs_two_successful_queries(kb):
    for q in ("first", "second"):
        qid, _ = ask(kb, q, ["alphago", "monte carlo tree search"], ["alphago-architecture.md"])
        kb.learning.feedback(qid, ["alphago-architecture.md"], [])
    res = kb.learning.learn()
    co = [s for s in kinds(res, "similarity") if {s["keyword1"], s["keyword2"]} == {"alphago", "monte carlo tree search"}]
    assert len(co) == 1 and co[0]["evidence"] == 2


def test_expansion_success_adjusts_similarity_scores_and_undo_restores(kb):
    rel = kb.conn.execute(
        "SELECT s.id, s.score FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 "
        "JOIN keywords b ON b.id = s.keyword_id_2 WHERE s.similarity_type = 'abbreviation' AND "
        "'rl' IN (a.keyword, b.keyword) AND 'reinforcement learning' IN (a.keyword, b.keyword)").fetchone()
    rel_id, original = rel
    exp = {"experience-based-learning.md": [{"relation_id": rel_id, "original": "reinforcement learning",
                                             "expanded": "rl"}]}
    q1, _ = ask(kb, "q1", ["reinforcement learning"], ["experience-based-learning.md"], exp)
    kb.learning.feedback(q1, [], ["experience-based-learning.md"])
    q2, _ = ask(kb, "q2", ["reinforcement learning"], ["experience-based-learning.md"], exp)
    kb.learning.feedback(q2, [], ["experience-based-learning.md"])
    res = kb.learning.learn()
    adj = kinds(res, "score")
    assert len(adj) == 1 and adj[0]["delta"] < 0
    lowered = kb.conn.execute("SELECT score FROM keyword_similarities WHERE id = ?", (rel_id,)).fetchone()[0]
    assert lowered == pytest.approx(original + adj[0]["delta"])
    removed = kb.learning.learned_remove(all_=True)
    assert removed["count"] >= 1
    assert kb.conn.execute("SELECT score FROM keyword_similarities WHERE id = ?", (rel_id,)).fetchone()[0] == original
    # Removed items are not learned again.
    assert kb.learning.learn(reprocess=True)["suggestions"] == []


def test_learn_is_idempotent_and_dry_run_writes_nothing(kb):
    for q in ("one", "two"):
        qid, _ = ask(kb, f"question {q} about tree search", ["game tree"], ["alphago-architecture.md"])
        kb.learning.feedback(qid, ["alphago-architecture.md"], [])
    dump = lambda: json.dumps(kb.export(), sort_keys=True)  # noqa: E731
    before = dump()
    dry = kb.learning.learn(dry_run=True)
    assert dry["suggestions"] and dry["applied"] == 0
    assert dump() == before
    real = kb.learning.learn()
    assert real["applied"] == len(dry["suggestions"]) and real["marked_processed"] == 2
    after = dump()
    second = kb.learning.learn()
    assert second["suggestions"] == [] and second["applied"] == 0
    assert dump() == after
    assert kb.learning.learn(reprocess=True)["suggestions"] == []
    assert dump() == after


def test_learned_items_list_with_provenance_and_remove(kb):
    qid, _ = ask(kb, "tree search for board games", [], ["alphago-architecture.md"])
    kb.learning.feedback(qid, ["alphago-architecture.md"], [])
    kb.learning.learn()
    items = kb.learning.learned_list()["learned"]
    assert items and all(i["feedback_ids"] and i["reason"] for i in items)
    fb_id = kb.conn.execute("SELECT id FROM query_feedback").fetchone()[0]
    assert items[0]["feedback_ids"] == [fb_id]
    kb.learning.learned_remove([items[0]["id"]])
    assert kb.learning.learned_list()["count"] == len(items) - 1
    assert kb.learning.learned_list(include_removed=True)["learned"][0]["status"] == "removed"
    with pytest.raises(NotFoundError):
        kb.learning.learned_remove([9999])


def test_person_keywords_win_over_learned_ones(kb, project):
    for q in ("one", "two"):
        qid, _ = ask(kb, q, ["game tree"], ["alphago-architecture.md"])
        kb.learning.feedback(qid, ["alphago-architecture.md"], [])
    kb.learning.learn()
    path = project / "knowledge-base" / "alphago-architecture.keywords.json"
    data = json.loads(path.read_text())
    data["keywords"].append("game tree")
    path.write_text(json.dumps(data))
    kb.sync()
    tags = {k["keyword"].lower(): k["source"] for k in kb.keywords("alphago-architecture.md")["keywords"]}
    assert tags["game tree"] == "file"
    kb.learning.learned_remove(all_=True)
    tags = {k["keyword"].lower(): k["source"] for k in kb.keywords("alphago-architecture.md")["keywords"]}
    assert tags["game tree"] == "file", "undoing learning must not delete what a person wrote"


def test_clear_history_in_the_cli_names_its_own_options(kb, run):
    """The API's wording (``all_=True``) leaked into the command's error."""
    res = run("clear-history", "--format", "json", cwd=kb.kb_root.parent)
    assert res.returncode == 2 and res.error()["code"] == "usage"
    assert "--before DATE or --all" in res.error()["message"] and "all_" not in res.error()["message"]


def test_history_and_clear_history(kb):
    qid, _ = ask(kb, "first question", ["rl"], ["experience-based-learning.md"])
    ask(kb, "second question", [], [])
    listed = kb.learning.history()
    assert listed["count"] == 2
    detail = kb.learning.history(qid)
    assert detail["question"] == "first question" and len(detail["attempts"]) == 1
    kb.learning.feedback(qid, ["experience-based-learning.md"], [])
    with pytest.raises(UsageError, match="before or all_=True"):   # nothing deleted by default
        kb.learning.clear_history()
    with pytest.raises(UsageError):
        kb.learning.clear_history("2026-01-01", all_=True)
    assert kb.learning.history()["count"] == 2
    res = kb.learning.clear_history(all_=True)
    assert res == {"queries_removed": 2, "feedback_removed": 1, "before": None}
    assert kb.learning.history()["count"] == 0


FEEDBACK_WRITER = textwrap.dedent("""
    import sys
    from kb_indexer.api import KnowledgeBase
    kb = KnowledgeBase.open(sys.argv[1])
    qid = int(sys.argv[2])
    docs = sys.argv[3:]
    for d in docs:
        kb.learning.feedback(qid, [d], [])
    kb.close()
""")


def test_concurrent_feedback_from_several_processes_loses_nothing(kb, tmp_path):
    docs = [r["filepath"] for r in kb.list_docs()["documents"]]
    qids = [ask(kb, f"q{i}", [], docs)[0] for i in range(4)]
    script = tmp_path / "fb.py"
    script.write_text(FEEDBACK_WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(kb.db_path), str(q), *docs],
                              stderr=subprocess.PIPE, text=True) for q in qids]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert kb.conn.execute("SELECT COUNT(*) FROM query_feedback").fetchone()[0] == 4 * len(docs)


def test_not_helpful_marks_withdraw_learned_keywords_and_similarities(kb):
    qids = []
    for q in ("first", "second"):
        qid, _ = ask(kb, q, ["game ai", "neural networks"], ["alphago-architecture.md"])
        kb.learning.feedback(qid, ["alphago-architecture.md"], [])
        qids.append(qid)
    res = kb.learning.learn()
    assert {s["key"] for s in kinds(res, "keyword")} == {"keyword:%d:game ai" % _doc(kb, "alphago-architecture.md"),
                                                          "keyword:%d:neural networks" % _doc(kb, "alphago-architecture.md")}
    assert any(s["kind"] == "similarity" for s in res["suggestions"])
    kb.learning.feedback(qids[0], [], ["alphago-architecture.md"])  # the first query changes its mind
    res = kb.learning.learn()
    withdrawn = {s["key"]: s for s in res["suggestions"] if s["kind"] in ("keyword", "similarity")}
    assert withdrawn and all(s["action"] == "update" for s in withdrawn.values())
    tags = {k["keyword"].lower(): k["source"] for k in kb.keywords("alphago-architecture.md")["keywords"]}
    assert "game ai" not in tags and "neural networks" not in tags
    assert kb.conn.execute("SELECT COUNT(*) FROM keyword_similarities WHERE origin = 'learned'").fetchone()[0] == 0
    # Evidence returning brings them back.
    q3, _ = ask(kb, "third", ["game ai", "neural networks"], ["alphago-architecture.md"])
    kb.learning.feedback(q3, ["alphago-architecture.md"], [])
    q4, _ = ask(kb, "fourth", ["game ai", "neural networks"], ["alphago-architecture.md"])
    kb.learning.feedback(q4, ["alphago-architecture.md"], [])
    kb.learning.learn()
    tags = {k["keyword"].lower(): k["source"] for k in kb.keywords("alphago-architecture.md")["keywords"]}
    assert tags.get("game ai") == "learned"


def _doc(kb, path):
    return kb.conn.execute("SELECT id FROM documents WHERE filepath = ?", (path,)).fetchone()[0]


def _rel(kb):
    return kb.conn.execute(
        "SELECT s.id, s.score FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 "
        "JOIN keywords b ON b.id = s.keyword_id_2 WHERE s.similarity_type = 'abbreviation' AND "
        "'rl' IN (a.keyword, b.keyword) AND 'reinforcement learning' IN (a.keyword, b.keyword)").fetchone()


def _rl_marked_not_helpful_once(kb):
    """One query expanded 'reinforcement learning' -> 'rl' and found a not-helpful document; learned."""
    rel_id, original = _rel(kb)
    exp = {"experience-based-learning.md": [{"relation_id": rel_id, "original": "reinforcement learning",
                                             "expanded": "rl"}]}
    q1, _ = ask(kb, "q1", ["reinforcement learning"], ["experience-based-learning.md"], exp)
    kb.learning.feedback(q1, [], ["experience-based-learning.md"])
    kb.learning.learn()
    return rel_id, original, exp


def test_score_adjustment_returns_when_evidence_cancels_out(kb):
    rel_id, original, exp = _rl_marked_not_helpful_once(kb)
    assert _rel(kb)[1] == pytest.approx(original - 0.05)
    q2, _ = ask(kb, "q2", ["reinforcement learning"], ["experience-based-learning.md"], exp)
    kb.learning.feedback(q2, ["experience-based-learning.md"], [])
    kb.learning.learn()
    assert _rel(kb)[1] == pytest.approx(original)


def test_undoing_a_score_adjustment_keeps_a_later_person_edit(kb):
    rel_id, original, exp = _rl_marked_not_helpful_once(kb)
    kb.relate("RL", "reinforcement learning", "abbreviation", "a person's edit", 0.7)
    kb.learning.learned_remove(all_=True)
    assert _rel(kb)[1] == pytest.approx(0.7)


LEARN_SLOWLY = textwrap.dedent("""
    import json, sys, time
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.learn import apply as ap

    original = ap.analyse
    def slow(*a, **k):
        print("analysing", flush=True)
        time.sleep(2)
        return original(*a, **k)
    ap.analyse = slow
    kb = KnowledgeBase.open(sys.argv[1])
    print(json.dumps(kb.learning.learn()), flush=True)
""")


def test_feedback_given_while_learn_runs_is_not_marked_processed_unseen(kb, tmp_path):
    q1, _ = ask(kb, "first question", [], ["alphago-architecture.md"])
    q2, _ = ask(kb, "second question", [], ["retrieval-augmented-generation.md"])
    kb.learning.feedback(q1, ["alphago-architecture.md"], [])
    script = tmp_path / "slow_learn.py"
    script.write_text(LEARN_SLOWLY)
    learner = subprocess.Popen([sys.executable, str(script), str(kb.db_path)], stdout=subprocess.PIPE, text=True)
    assert learner.stdout.readline().strip() == "analysing"
    writer = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from kb_indexer.api import KnowledgeBase
        KnowledgeBase.open({str(kb.db_path)!r}).learning.feedback({q2}, ["retrieval-augmented-generation.md"], [])
    """)], capture_output=True, text=True, timeout=60)
    assert writer.returncode == 0, writer.stderr
    first = json.loads(learner.stdout.readline())
    learner.wait(timeout=60)
    assert first["marked_processed"] == 1
    second = kb.learning.learn()
    assert second["feedback_analyzed"] == 1 and second["marked_processed"] == 1
