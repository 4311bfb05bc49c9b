"""`learn` prints the design's sections (keyword gap, keyword augmentation, pattern recognition, ...)
with readable lines and counts, not internal keys; the JSON carries the same content as fields
(`section`, `description` per suggestion, `sections` counts) beside the structured ones."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import kw, write_doc

GAP = 'Add similarity: "monte carlo" ↔ "MCTS" (related_concept, score 0.8)'
GAP_NN = 'Add similarity: "neural networks" ↔ "AlphaGo" (related_concept, score 0.7)'
AUGMENT = 'Add keyword "neural networks" to alphago.md (weight 0.8)'
PATTERN = 'Add similarity: "monte carlo" ↔ "neural networks" (related_concept, score 0.6)'


@pytest.fixture
def taught(small):
    """The design's example: three queries searched "Monte Carlo"; every helpful document is tagged
    MCTS; "neural networks" found alphago.md twice, together with "Monte Carlo"."""
    kb, kbdir = small
    write_doc(kbdir, "mcts.md", "# MCTS\n\nMonte Carlo tree search.\n", kw("tree search", "MCTS", "tree search"))
    write_doc(kbdir, "alphago.md", "# AlphaGo\n\nNetworks and search.\n", kw("alphago", "MCTS", "AlphaGo"))
    write_doc(kbdir, "ucb.md", "# UCB1\n\nBandits.\n", kw("ucb", "MCTS", "UCB1"))
    assert kb.sync()["errors"] == []
    for question, keywords, doc in (("How does AlphaGo pick moves?", ["Monte Carlo", "neural networks"], "alphago.md"),
                                    ("Explain tree search in Go", ["Monte Carlo", "neural networks"], "alphago.md"),
                                    ("What is UCB1?", ["Monte Carlo"], "ucb.md")):
        qid = kb.query(question, keywords)["query_id"]
        kb.learning.feedback(qid, [doc], [])
    return kb


def test_json_suggestions_carry_section_and_description(taught):
    result = taught.learning.learn(dry_run=True)
    by_line = {s["description"]: s for s in result["suggestions"]}
    assert by_line[GAP]["section"] == "keyword_gap" and by_line[GAP]["kind"] == "similarity"
    assert by_line[GAP]["evidence"] == 3 and by_line[GAP]["key"] == "similarity:mcts|monte carlo"
    assert by_line[GAP_NN]["section"] == "keyword_gap"
    assert by_line[AUGMENT]["section"] == "keyword_augmentation" and by_line[AUGMENT]["keyword"] == "neural networks"
    assert by_line[PATTERN]["section"] == "pattern_recognition" and by_line[PATTERN]["evidence"] == 2
    assert result["sections"] == {"keyword_gap": 2, "keyword_augmentation": 2, "pattern_recognition": 1,
                                  "similarity_scoring": 0, "associations": 3}
    assert sum(result["sections"].values()) == result["summary"]["total"] == len(result["suggestions"])
    assert {s["section"] for s in result["suggestions"] if s["kind"] == "association"} == {"associations"}


def test_table_prints_the_design_sections(taught, cli):
    res = cli("learn", "--db", taught.db_path)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert out.startswith("Analyzing 3 unprocessed feedback entries from 3 queries...\n")
    order = [out.index(h) for h in ("Keyword Gap Analysis:", "Keyword Augmentation:", "Pattern Recognition:",
                                    "Question Associations:", "Summary:")]
    assert order == sorted(order)
    assert "Similarity Scoring:" not in out   # an empty section is left out
    for line in (GAP, GAP_NN, AUGMENT, PATTERN):
        assert f"✓ {line}\n" in out, out
    assert "  Reason: 3 queries searched 'monte carlo'; their helpful documents are tagged 'mcts'" in out
    assert ("- 2 similarity suggestions from keyword gaps\n- 2 keyword augmentation suggestions\n"
            "- 1 pattern-based suggestion\n- 3 question associations\n- Total: 8 suggestions\n") in out
    assert out.endswith("Applied 8 suggestions.\nMarked 3 feedback entries as processed.\n")
    assert not re.search(r"association:\d|similarity:\S+\||score:\d|\[(association|keyword|similarity)\]", out)


def test_dry_run_marks_suggestions_as_not_applied(taught, cli):
    out = cli("learn", "--dry-run", "--db", taught.db_path).stdout
    assert f"~ {GAP}\n" in out and "✓" not in out and out.endswith("Dry run: nothing written.\n")
    again = cli("learn", "--dry-run", "--db", taught.db_path, "--format", "json")
    assert json.loads(again.stdout)["summary"]["total"] == 8


def test_withdrawn_and_score_items_read_as_such(taught):
    taught.learning.learn()
    qid = taught.query("Why MCTS?", ["Monte Carlo", "neural networks"])["query_id"]
    taught.learning.feedback(qid, [], ["alphago.md"])
    qid = taught.query("Why MCTS again?", ["Monte Carlo", "neural networks"])["query_id"]
    taught.learning.feedback(qid, [], ["alphago.md"])
    lines = {s["description"] for s in taught.learning.learn(dry_run=True)["suggestions"]}
    assert 'Withdraw keyword "neural networks" from alphago.md' in lines, lines


def test_score_adjustment_names_the_relation(kb):
    from kb_indexer.learn.report import describe
    sid = kb.conn.execute(
        "SELECT s.id FROM keyword_similarities s JOIN keywords a ON a.id = s.keyword_id_1 JOIN keywords b ON "
        "b.id = s.keyword_id_2 WHERE s.similarity_type = 'application' AND a.keyword IN ('rl', 'alphago') AND "
        "b.keyword IN ('rl', 'alphago')").fetchone()[0]
    line = describe(kb.conn, {"kind": "score", "similarity_id": sid, "delta": -0.05})
    assert line == 'Lower the score of "RL" → "AlphaGo" (application) by 0.05 (currently 0.6)'


def test_empty_learn_says_so(small, cli):
    kb, _ = small
    out = cli("learn", "--db", kb.db_path).stdout
    assert out == ("Analyzing 0 unprocessed feedback entries from 0 queries...\n\nSummary:\n- Total: 0 suggestions\n\n"
                   "Applied 0 suggestions.\nMarked 0 feedback entries as processed.\n")
