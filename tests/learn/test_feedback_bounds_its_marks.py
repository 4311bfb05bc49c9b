"""One `feedback` marks at most MAX_FEEDBACK_MARKS documents (200,000 paths over MCP took 15 s of a worker), and
its not-in-the-index error names ten of them and counts the rest (it listed every one: megabytes)."""

from __future__ import annotations

import pytest

from kb_indexer.errors import KbError
from kb_indexer.limits import MAX_FEEDBACK_MARKS


def test_too_many_marks_are_refused_before_any_is_read(kb):
    qid = kb.query("reward shaping")["query_id"]
    with pytest.raises(KbError, match=f"at most {MAX_FEEDBACK_MARKS}"):
        kb.learning.feedback(qid, [f"n{i}.md" for i in range(MAX_FEEDBACK_MARKS + 1)])
    assert kb.conn.execute("SELECT COUNT(*) FROM query_feedback").fetchone()[0] == 0


def test_missing_documents_are_named_ten_at_most(kb):
    qid = kb.query("reward shaping")["query_id"]
    with pytest.raises(KbError) as missing:
        kb.learning.feedback(qid, [f"n{i}.md" for i in range(500)])
    assert missing.value.code == "not_found" and "and 490 more" in missing.value.message
    assert len(missing.value.message) < 400
