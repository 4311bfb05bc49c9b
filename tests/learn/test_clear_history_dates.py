"""`clear-history --before`: the Python API and the CLI read dates the same way (issue 8 item 7)."""

from __future__ import annotations

import pytest

from kb_indexer.errors import UsageError

pytestmark = pytest.mark.both_engines


def _two_queries(kb):
    old = kb.query("reinforcement learning", ["RL"])["query_id"]
    new = kb.query("neural networks", ["neural network"])["query_id"]
    kb.conn.execute("UPDATE queries SET last_attempted_at = '2026-01-31T12:00:00' WHERE id = ?", (old,))
    kb.conn.execute("UPDATE queries SET last_attempted_at = '2026-02-02T12:00:00' WHERE id = ?", (new,))
    return old, new


def _ids(kb):
    return {r[0] for r in kb.conn.execute("SELECT id FROM queries")}


def test_api_reads_an_offset_as_a_point_in_time(kb):
    old, new = _two_queries(kb)
    res = kb.learning.clear_history("2026-01-31T08:00:00-05:00")  # 13:00 UTC: after the old query
    assert res["queries_removed"] == 1 and res["before"] == "2026-01-31T13:00:00"
    assert _ids(kb) == {new}


def test_api_refuses_what_is_not_a_date_and_deletes_nothing(kb):
    _two_queries(kb)
    with pytest.raises(UsageError):
        kb.learning.clear_history("yesterday")
    assert len(_ids(kb)) == 2


def test_api_and_cli_agree(kb):
    from typer.testing import CliRunner

    from kb_indexer.cli.app import app

    old, new = _two_queries(kb)
    res = CliRunner().invoke(app, ["clear-history", "--before", "2026-02-01", "--db", getattr(kb.db_path, "url", kb.db_path),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    assert _ids(kb) == {new}
    assert kb.learning.clear_history("2026-02-02T13:00:00Z")["queries_removed"] == 1
