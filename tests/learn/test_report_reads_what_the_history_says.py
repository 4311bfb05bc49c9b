"""`kbindex report`: each section on a hand-built history, --since, --limit, an empty history, the feedback rate
per asker, the JSON shape and the table; on both engines."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import UsageError
from kb_indexer.learn.history import record
from kb_indexer.store.team import current_asker, on_behalf

pytestmark = pytest.mark.both_engines

A, B = "alphago-architecture.md", "fine-tuning-llms.md"


def _ask(kb, question, paths=(), when=None, context=None):
    results = [{"filepath": p, "relevance_score": 1.0, "matched_keywords": [], "sources": []} for p in paths]
    qid, aid = record(kb.conn, question, context, keywords=[], expand_depth=1, threshold=0.0, method="keyword",
                      results=results, expansions=[])
    if when:
        kb.conn.execute("UPDATE query_attempts SET created_at = ? WHERE id = ?", (when, aid))
    return qid


def _history(kb):
    _ask(kb, "nothing here", when="2026-01-10T00:00:00")
    _ask(kb, "Nothing here ", when="2026-03-01T00:00:00", context="other")   # the same question, other case
    never = _ask(kb, "how does alphago work", [A])
    _ask(kb, "how does alphago work", [A])
    _ask(kb, "how does alphago work", [A])
    kb.learning.feedback(never, not_helpful=[A])
    helped = _ask(kb, "fine tuning", [B])
    _ask(kb, "fine tuning", [B])
    kb.learning.feedback(helped, helpful=[B])
    _ask(kb, "asked once", [A])
    _ask(kb, "", [A])   # keywords only: not a question


def _questions(section):
    return [i["question"] for i in section["items"]]


def test_each_section_on_a_hand_built_history(kb):
    _history(kb)
    out = kb.learning.report()
    assert out["zero_results"]["count"] == 1 and out["zero_results"]["items"][0]["attempts"] == 2
    assert _questions(out["never_helpful"]) == ["how does alphago work"]
    assert _questions(out["most_asked"])[:2] == ["how does alphago work", "fine tuning"]
    assert out["most_asked"]["count"] == 4
    assert out["feedback_rate"]["overall"] == {"questions": 4, "marked": 2, "helpful": 1, "marked_share": 0.5,
                                               "helpful_share": 0.25}
    never = out["never_returned"]
    docs = {r[0] for r in kb.conn.execute("SELECT filepath FROM documents")}
    assert set(never["items"]) <= docs - {A, B} and never["count"] == len(docs) - 2
    assert never["top_results_recorded"] == 10 and "first 10" in never["note"]


def test_since_counts_only_later_attempts(kb):
    _history(kb)
    out = kb.learning.report(since="2026-02-01")
    assert out["since"] == "2026-02-01T00:00:00"
    assert out["zero_results"]["items"][0]["attempts"] == 1
    with pytest.raises(UsageError, match="--since"):
        kb.learning.report(since="last tuesday")


def test_limit_bounds_every_list_not_the_counts(kb):
    _history(kb)
    out = kb.learning.report(limit=1)
    assert len(out["most_asked"]["items"]) == 1 and out["most_asked"]["count"] == 4
    assert len(out["never_returned"]["items"]) == 1 and out["never_returned"]["count"] > 1
    assert len(kb.learning.report(limit=0)["most_asked"]["items"]) == 4


def test_an_empty_history_reports_nothing_found(kb):
    out = kb.learning.report()
    assert out["zero_results"] == {"count": 0, "items": []} and out["most_asked"]["count"] == 0
    assert out["feedback_rate"]["overall"]["marked_share"] is None
    assert out["never_returned"]["count"] == kb.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]


def _as(kb, name, body):
    """``body(handle)`` on a connection of its own that asks on behalf of ``name``; the asker it records."""
    with on_behalf(name), KnowledgeBase.open(kb.db_path) as handle:
        body(handle)
        return current_asker(handle.conn)


def _ann(k):
    helped = _ask(k, "fine tuning", [B])
    k.learning.feedback(helped, helpful=[B])
    _ask(k, "how does alphago work", [A])
    _ask(k, "asked once", [A])


def _bob(k):
    unhelped = _ask(k, "how does alphago work", [A])
    k.learning.feedback(unhelped, not_helpful=[A])


def test_the_feedback_rate_per_asker_counts_its_questions_and_its_own_marks(kb):
    ann, bob = _as(kb, "ann", _ann), _as(kb, "bob", _bob)
    rates = kb.learning.report()["feedback_rate"]
    assert rates["overall"] == {"questions": 3, "marked": 2, "helpful": 1, "marked_share": 0.6667,
                                "helpful_share": 0.3333}
    assert rates["askers"] == 2
    assert rates["by_asker"] == [   # most questions first; a question two askers asked counts for each
        {"asker": ann, "questions": 3, "marked": 1, "helpful": 1, "marked_share": 0.3333, "helpful_share": 0.3333},
        {"asker": bob, "questions": 1, "marked": 1, "helpful": 0, "marked_share": 1.0, "helpful_share": 0.0}]
    assert kb.learning.report(limit=1)["feedback_rate"]["by_asker"] == rates["by_asker"][:1]
    assert kb.learning.report(since="2999-01-01")["feedback_rate"] == {
        "overall": {"questions": 0, "marked": 0, "helpful": 0, "marked_share": None, "helpful_share": None},
        "askers": 0, "by_asker": []}


def _cli(kb, *args):
    res = CliRunner().invoke(_app(), ["report", "--db", getattr(kb.db_path, "url", kb.db_path), *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def _app():
    from kb_indexer.cli.app import app
    return app


def test_cli_json_is_the_api_report(kb):
    _history(kb)
    out = json.loads(_cli(kb, "--format", "json", "--limit", "2"))
    assert out == kb.learning.report(limit=2)
    assert set(out) == {"since", "limit", "zero_results", "never_helpful", "most_asked", "feedback_rate",
                        "never_returned"}


def test_cli_table_names_each_section(kb):
    _history(kb)
    text = _cli(kb)
    for heading in ("Questions that found nothing: 1", "never marked helpful: 1", "Most asked: 4",
                    "Feedback: 2 of 4 questions marked (50%)", "Documents never returned"):
        assert heading in text
    assert "how does alphago work" in text


def test_cli_table_lists_the_feedback_rate_per_asker(kb):
    ann, bob = _as(kb, "ann", _ann), _as(kb, "bob", _bob)
    lines = _cli(kb).splitlines()
    at = lines.index("Feedback by asker: 2")
    assert lines[at + 1:at + 3] == [f"  {ann}: 1 of 3 questions marked (33%), 1 helpful (33%)",
                                    f"  {bob}: 1 of 1 question marked (100%), 0 helpful (0%)"]
