"""`kbindex eval` scores the ranking of `kbindex query` on relevance judgements (a BEIR file pair, or the
index's own feedback marks): nDCG@10 and Recall@100 as the textbook defines them, beside a second
configuration with per-question wins and losses, recording nothing; bad input is a clear error."""

from __future__ import annotations

import json
import math

import pytest

from kb_indexer.api import KnowledgeBase, QueryOptions
from kb_indexer.errors import UsageError
from kb_indexer.learn.evaluate import ndcg_at, parse_spec, recall_at, sign_test
from kb_indexer.learn.judgements import documents_of, unmatched_key

QUESTION = "how do agents improve by acting and observing rewards"
TARGET = "trial-and-error-learning.md"


# -- the metrics, on cases computed by hand ------------------------------------------------------------------
def test_ndcg_is_graded_dcg_over_the_ideal_dcg():
    # ranked b (grade 1), a (grade 2): DCG = 1/log2(2) + 3/log2(3); ideal a, b: 3/log2(2) + 1/log2(3)
    assert ndcg_at(["b", "a"], {"a": 2, "b": 1}) == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert ndcg_at(["a", "b"], {"a": 2, "b": 1}) == pytest.approx(1.0)
    assert ndcg_at(["x", "y", "a"], {"a": 1}) == pytest.approx(1 / math.log2(4))   # rank 3: log2(3 + 1) = 2
    assert ndcg_at(["x"], {"a": 1}) == 0.0


def test_ndcg_counts_ten_results_and_an_unindexed_relevant_document_in_the_ideal():
    ranked = [f"d{i}" for i in range(10)] + ["a"]
    assert ndcg_at(ranked, {"a": 3}) == 0.0                        # rank 11 is past the cut
    assert ndcg_at(["a"], {"a": 1, unmatched_key("gone"): 1}) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at(["a", "n"], {"a": 1, "n": 0}) == pytest.approx(1.0)   # judged not relevant: no gain, no ideal


def test_recall_counts_the_relevant_documents_in_the_first_hundred():
    ranked = [f"d{i}" for i in range(100)] + ["late"]
    assert recall_at(ranked, {"d0": 1, "d99": 2, "late": 1, "never": 1, "n": 0}) == pytest.approx(2 / 4)
    assert recall_at(["a"], {"a": 1, unmatched_key("gone"): 1}) == 0.5


def test_the_sign_test_is_two_sided_and_exact():
    assert sign_test(5, 0) == pytest.approx(2 / 32)
    assert sign_test(0, 5) == pytest.approx(2 / 32)
    assert sign_test(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert sign_test(3, 3) == 1.0 and sign_test(0, 0) is None


def test_a_configuration_spec_names_query_options():
    assert parse_spec("no-learned") == {"use_learned": False}
    assert parse_spec("method=fulltext, expand-depth=0,no-learned") == {"method": "fulltext", "expand_depth": 0,
                                                                         "use_learned": False}
    assert parse_spec("types=synonym,narrower,min_weight=0.5") == {"types": ("synonym", "narrower"), "min_weight": 0.5}
    assert parse_spec("weights=narrower:0.9,synonym:1") == {"weights": {"narrower": 0.9, "synonym": 1.0}}
    assert parse_spec("column_weights=1,1,2,0.5,prf=on") == {"column_weights": (1.0, 1.0, 2.0, 0.5), "prf": True}
    for bad, said in (("limit=5", "Recall@100"), ("record=true", "records nothing"), ("colour=red", "unknown option"),
                      ("expand_depth=deep", "whole number"), ("hybrid", "not KEY=VALUE"), ("prf=maybe", "true or false")):
        with pytest.raises(UsageError, match=said):
            parse_spec(bad)


# -- corpus ids to documents ---------------------------------------------------------------------------------
def test_corpus_ids_name_documents_by_path_by_path_without_md_or_by_a_unique_file_name(small):
    kb, kbdir = small
    for rel in ("12.md", "notes/alpha.md", "deep/er/only.md", "a/twice.md", "b/twice.md"):
        (kbdir / rel).parent.mkdir(parents=True, exist_ok=True)
        (kbdir / rel).write_text(f"# {rel}\n\nText of {rel}.\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    found, ambiguous = documents_of(kb.conn, {"12", "12.md", "notes/alpha", "only", "twice", "nothing"})
    assert found == {"12": "12.md", "12.md": "12.md", "notes/alpha": "notes/alpha.md", "only": "deep/er/only.md"}
    assert ambiguous == ["twice"]


# -- the command on a built knowledge base -------------------------------------------------------------------
@pytest.fixture
def proj(project, run):
    assert run("init", cwd=project).returncode == 0
    assert run("sync", cwd=project).returncode == 0
    return project


def _beir(folder, queries: dict[str, str], qrels: list[tuple[str, str, int]]):
    """A BEIR queries.jsonl and qrels/test.tsv in ``folder``."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items()),
                                          encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{s}\n" for q, d, s in qrels), encoding="utf-8")
    return folder / "queries.jsonl", folder / "qrels" / "test.tsv"


BEIR_QUERIES = {"alphago": "How does AlphaGo work?", "rewards": QUESTION, "unjudged": "python virtual environments"}
BEIR_QRELS = [("alphago", "alphago-architecture", 2), ("alphago", "monte-carlo-tree-search.md", 1),
              ("rewards", "trial-and-error-learning", 2), ("rewards", "reward-shaping", 1),
              ("rewards", "not-in-the-index", 1), ("unjudged", "fine-tuning-llms", 0), ("elsewhere", "x", 1)]


def _json(run, proj, *args):
    res = run("eval", *args, "--format", "json", cwd=proj)
    assert res.returncode == 0, res.stderr
    return res.json(), res.stderr


def _expected(kb, question: str, grades: dict[str, int]) -> tuple[float, float]:
    """nDCG@10 and Recall@100 worked out here from the API's own query (the textbook formulas, written out)."""
    ranked = [r["filepath"] for r in kb.query(question, options=QueryOptions(limit=100, record=False))["results"]]
    dcg = sum((2 ** grades.get(p, 0) - 1) / math.log2(i + 2) for i, p in enumerate(ranked[:10]))
    ideal = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(grades.values(), reverse=True)[:10]))
    return dcg / ideal, len(set(ranked[:100]) & set(grades)) / len(grades)


def test_eval_of_a_beir_file_pair_scores_each_judged_question_as_query_ranks_it(proj, run):
    queries, qrels = _beir(proj / "beir", BEIR_QUERIES, BEIR_QRELS)
    out, err = _json(run, proj, "--queries", queries, "--qrels", qrels)
    j = out["judgements"]
    assert (j["source"], j["questions"], j["unjudged"], j["without_text"]) == ("beir", 2, 1, 1)
    assert (j["relevant"], j["unmatched"], j["unmatched_ids"]) == (5, 1, ["not-in-the-index"])
    assert "1 relevant document of the judgements is not indexed" in err
    with KnowledgeBase.open(proj / "kbindex.db") as kb:
        alphago = _expected(kb, BEIR_QUERIES["alphago"], {"alphago-architecture.md": 2, "monte-carlo-tree-search.md": 1})
        rewards = _expected(kb, QUESTION, {TARGET: 2, "reward-shaping.md": 1, "\0not-in-the-index": 1})
    rows = {q["id"]: q for q in out["questions"]}
    assert set(rows) == {"alphago", "rewards"} and out["count"] == 2
    for qid, (ndcg, recall) in (("alphago", alphago), ("rewards", rewards)):
        assert rows[qid]["ndcg_at_10"] == pytest.approx(ndcg, abs=1e-4)
        assert rows[qid]["recall_at_100"] == pytest.approx(recall, abs=1e-4)
    assert rows["rewards"]["recall_at_100"] == pytest.approx(2 / 3, abs=1e-4)   # the unindexed one stays in the denominator
    assert out["base"]["ndcg_at_10"] == pytest.approx((alphago[0] + rewards[0]) / 2, abs=1e-4)
    assert out["base"]["name"] == "as it is" and out["base"]["options"] == {}
    assert out["compare"] is None and out["wins"] is None and "delta" not in rows["alphago"]
    folder, _ = _json(run, proj, "--queries", proj / "beir")   # the folder stands for both files
    assert folder["questions"] == out["questions"]


def test_eval_records_nothing_in_the_history(proj, run):
    queries, qrels = _beir(proj / "beir", BEIR_QUERIES, BEIR_QRELS)
    asked = run("query", QUESTION, "-f", "json", cwd=proj).json()
    run("feedback", str(asked["query_id"]), "--helpful", TARGET, cwd=proj)
    before = run("history", str(asked["query_id"]), "-f", "json", cwd=proj).json()
    _json(run, proj, "--queries", queries, "--qrels", qrels, "--compare", "no-learned")
    _json(run, proj, "--qrels", "feedback", "--compare", "method=fulltext")
    assert run("history", "-f", "json", cwd=proj).json()["count"] == 1
    after = run("history", str(asked["query_id"]), "-f", "json", cwd=proj).json()
    assert [a["attempt_id"] for a in after["attempts"]] == [a["attempt_id"] for a in before["attempts"]] == [
        asked["attempt_id"]]


def test_after_feedback_and_learn_the_index_beats_itself_without_learned_items(proj, run):
    queries, qrels = _beir(proj / "beir", {"rewards": QUESTION}, [("rewards", TARGET, 1)])
    first, _ = _json(run, proj, "--queries", queries, "--qrels", qrels, "--compare", "no-learned")
    assert first["wins"] == first["losses"] == 0 and first["ties"] == 1 and first["delta_ndcg_at_10"] == 0
    assert first["base"]["ndcg_at_10"] < 1, "pick a document that is not already first"
    asked = run("query", QUESTION, "--limit", "17", "-f", "json", cwd=proj).json()
    assert run("feedback", str(asked["query_id"]), "--helpful", TARGET, cwd=proj).returncode == 0
    learned = run("learn", "-f", "json", cwd=proj).json()
    assert learned["summary"]["associations"] >= 1
    out, _ = _json(run, proj, "--queries", queries, "--qrels", qrels, "--compare", "no-learned")
    assert out["compare"]["name"] == "no-learned" and out["compare"]["options"] == {"use_learned": False}
    assert out["compare"]["ndcg_at_10"] == first["base"]["ndcg_at_10"]   # without them: as before learning
    assert out["base"]["ndcg_at_10"] > out["compare"]["ndcg_at_10"]
    assert (out["wins"], out["losses"], out["ties"]) == (1, 0, 0) and out["p_value"] == 1.0
    row = out["questions"][0]
    assert row["delta"] > 0 and row["delta"] == pytest.approx(row["ndcg_at_10"] - row["compare_ndcg_at_10"], abs=1e-4)
    assert out["delta_ndcg_at_10"] == pytest.approx(row["delta"], abs=1e-4)
    table = run("eval", "--queries", queries, "--qrels", qrels, "--compare", "no-learned", cwd=proj,
                env={"COLUMNS": "200"})
    assert table.returncode == 0, table.stderr
    assert "as it is" in table.stdout and "no-learned" in table.stdout and "nDCG@10" in table.stdout
    assert '"as it is" is better on 1 question' in table.stdout and f"[rewards] {QUESTION}" in table.stdout


def test_feedback_marks_are_judgements_helpful_relevant_and_not_helpful_judged_not(proj, run):
    helped = run("query", QUESTION, "-f", "json", cwd=proj).json()
    other = [r["filepath"] for r in helped["results"] if r["filepath"] != TARGET][:2]
    run("feedback", str(helped["query_id"]), "--helpful", TARGET, "--helpful", other[0], "--not-helpful", other[1],
        cwd=proj)
    only_bad = run("query", "How does AlphaGo work?", "-f", "json", cwd=proj).json()
    run("feedback", str(only_bad["query_id"]), "--not-helpful", only_bad["results"][0]["filepath"], cwd=proj)
    run("query", "never marked", "-f", "json", cwd=proj)
    out, _ = _json(run, proj, "--qrels", "feedback")
    j = out["judgements"]
    assert (j["source"], j["qrels"], j["queries"], j["questions"], j["unjudged"], j["relevant"]) == (
        "feedback", "feedback", None, 1, 1, 2)
    (row,) = out["questions"]
    assert (row["id"], row["question"], row["relevant"]) == (str(helped["query_id"]), QUESTION, 2)
    with KnowledgeBase.open(proj / "kbindex.db") as kb:
        ndcg, recall = _expected(kb, QUESTION, {TARGET: 1, other[0]: 1})
    assert row["ndcg_at_10"] == pytest.approx(ndcg, abs=1e-4) and row["recall_at_100"] == pytest.approx(recall)


def test_the_base_configuration_can_be_another_method_and_the_comparison_builds_on_it(proj, run):
    queries, qrels = _beir(proj / "beir", BEIR_QUERIES, BEIR_QRELS)
    out, _ = _json(run, proj, "--queries", queries, "--qrels", qrels, "--method", "fulltext",
                   "--compare", "expand_depth=0")
    assert out["base"]["name"] == "method=fulltext" and out["base"]["methods"] == {"fulltext": 2}
    assert out["compare"]["options"] == {"method": "fulltext", "expand_depth": 0}
    assert out["compare"]["methods"] == {"fulltext": 2}


# -- bad input -----------------------------------------------------------------------------------------------
def _error(run, proj, *args):
    res = run("eval", *args, "--format", "json", cwd=proj)
    assert res.stdout == "", res.stdout
    return res.returncode, res.error()


def test_bad_input_is_a_json_error_naming_the_file_and_line(proj, run):
    queries, qrels = _beir(proj / "beir", BEIR_QUERIES, BEIR_QRELS)
    code, err = _error(run, proj, "--queries", proj / "nope.jsonl", "--qrels", qrels)
    assert (code, err["code"]) == (1, "not_found") and "nope.jsonl" in err["message"]
    code, err = _error(run, proj, "--queries", queries, "--qrels", proj / "nope.tsv")
    assert (code, err["code"]) == (1, "not_found")
    (proj / "bad.jsonl").write_text('{"_id": "1", "text": "fine"}\n\n{"_id": "2", "text": \n', encoding="utf-8")
    code, err = _error(run, proj, "--queries", proj / "bad.jsonl", "--qrels", qrels)
    assert (code, err["code"]) == (1, "invalid_input") and "line 3" in err["message"]
    (proj / "bad.tsv").write_text("query-id\tcorpus-id\tscore\n1\t2\t1\n1\t3\thigh\n", encoding="utf-8")
    code, err = _error(run, proj, "--queries", queries, "--qrels", proj / "bad.tsv")
    assert (code, err["code"]) == (1, "invalid_input") and "line 3" in err["message"] and "whole number" in err["message"]
    (proj / "short.tsv").write_text("1\t2\t1\n1\t3\n", encoding="utf-8")
    code, err = _error(run, proj, "--queries", queries, "--qrels", proj / "short.tsv")
    assert (code, err["code"]) == (1, "invalid_input") and "line 2" in err["message"]


def test_a_bad_configuration_or_missing_judgements_is_bad_usage(proj, run):
    queries, qrels = _beir(proj / "beir", BEIR_QUERIES, BEIR_QRELS)
    for args, said in ((["--compare", "method=nope"], "Unknown method"), (["--compare", "limit=5"], "Recall@100"),
                       (["--compare", "types=synonym,nonsense"], "nonsense"), (["--base", "colour=red"], "colour")):
        code, err = _error(run, proj, "--queries", queries, "--qrels", qrels, *args)
        assert (code, err["code"]) == (2, "usage") and said in err["message"], err
    code, err = _error(run, proj)
    assert (code, err["code"]) == (2, "usage") and "--queries" in err["message"]
    code, err = _error(run, proj, "--queries", queries)
    assert (code, err["code"]) == (2, "usage") and "--qrels" in err["message"]
    code, err = _error(run, proj, "--qrels", "feedback", "--queries", queries)
    assert (code, err["code"]) == (2, "usage")


def test_feedback_judgements_without_any_feedback_say_how_to_give_some(proj, run):
    code, err = _error(run, proj, "--qrels", "feedback")
    assert (code, err["code"]) == (1, "not_found") and "kbindex feedback" in err["message"]


# -- the API -------------------------------------------------------------------------------------------------
def test_the_api_result_has_its_declared_type(kb, monkeypatch):
    pydantic = pytest.importorskip("pydantic", reason="pydantic comes with the MCP SDK (the dev extra)")
    from kb_indexer import results

    for name in ("EvalResult", "EvalConfig", "EvalJudgements", "EvalQuestion"):   # extra keys refused
        monkeypatch.setattr(getattr(results, name), "__pydantic_config__", pydantic.ConfigDict(extra="forbid"),
                            raising=False)
    asked = kb.query(QUESTION)
    kb.learning.feedback(asked["query_id"], [TARGET], [asked["results"][0]["filepath"]])
    kb.learning.learn()
    for compare in (None, "no-learned", QueryOptions(method="keyword")):
        out = kb.learning.evaluate("feedback", compare=compare)
        pydantic.TypeAdapter(results.EvalResult).validate_python(out, strict=True)
    assert out["compare"]["name"] == "compare" and out["compare"]["options"] == {"method": "keyword"}
    with pytest.raises(UsageError, match="qrels"):
        kb.learning.evaluate(5)   # type: ignore[arg-type]


# -- both engines --------------------------------------------------------------------------------------------
def test_postgresql_scores_the_same_as_sqlite(project, run, pg_url, tmp_path):
    queries, qrels = _beir(project / "beir", BEIR_QUERIES, BEIR_QRELS)
    outs = []
    for db in (str(tmp_path / "kbindex.db"), pg_url):
        for step in (["init", "--kb", project / "knowledge-base"], ["sync"]):
            assert run(*step, "--db", db, cwd=project).returncode == 0
        asked = run("query", QUESTION, "--db", db, "-f", "json", cwd=project).json()
        run("feedback", str(asked["query_id"]), "--helpful", TARGET, "--db", db, cwd=project)
        assert run("learn", "--db", db, cwd=project).returncode == 0
        pair = []
        for args in (["--queries", queries, "--qrels", qrels], ["--qrels", "feedback"]):
            res = run("eval", *args, "--compare", "no-learned", "--db", db, "-f", "json", cwd=project)
            assert res.returncode == 0, res.stderr
            out = res.json()
            for config in (out["base"], out["compare"]):
                config.pop("seconds")
            pair.append(out)
        outs.append(pair)
    assert outs[0] == outs[1]
    assert outs[0][1]["wins"] == 1
