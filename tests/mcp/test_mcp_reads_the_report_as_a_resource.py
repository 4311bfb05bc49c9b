"""Agents read `kbindex report` over MCP as the resource kbindex://report (JSON, the CLI's report), with the
real MCP SDK client; on both engines."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from kb_indexer.learn.history import record  # noqa: E402
from tests.mcp_client import session  # noqa: E402

pytestmark = pytest.mark.both_engines


def test_the_report_resource_is_the_cli_report(kb):
    record(kb.conn, "zzqx unfindable wording", None, keywords=[], expand_depth=1, threshold=0.0, method="keyword",
           results=[], expansions=[])

    async def body(s):
        listed = [str(r.uri) for r in (await s.list_resources()).resources]
        read = await s.read_resource("kbindex://report")
        return listed, read
    listed, read = session(kb.db_path, body)
    assert listed[0] == "kbindex://report"
    content = read.contents[0]
    assert content.mime_type == "application/json"
    report = json.loads(content.text)
    assert report == kb.learning.report()
    assert report["zero_results"]["items"][0]["question"] == "zzqx unfindable wording"
    assert set(report["feedback_rate"]) == {"overall", "askers", "by_asker"}
