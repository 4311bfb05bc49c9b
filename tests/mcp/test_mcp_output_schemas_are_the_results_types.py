"""The output schema each MCP tool publishes is the schema of its result type in `kb_indexer.results`
(the types the Python API's results are written in), so the tool catalog and the types cannot drift apart."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK (the optional extra kbindex[mcp]) is not installed")

from kb_indexer import results  # noqa: E402
from kb_indexer.mcp.outputs import TOOL_RESULTS, output_schema  # noqa: E402
from tests.mcp_client import session as _session  # noqa: E402


def test_each_tool_publishes_the_schema_of_its_result_type(kb):
    async def body(s):
        return (await s.list_tools()).tools
    published = {t.name: t.output_schema for t in _session(kb.db_path, body)}
    assert set(published) == set(TOOL_RESULTS)
    for name, result_type in TOOL_RESULTS.items():
        assert result_type.__module__.startswith("kb_indexer.results"), name
        assert published[name] == output_schema(result_type), name


def test_the_tool_results_are_cut_from_the_api_results():
    """Each field of an MCP item is a field of the API item it is cut from (a rename in one shows here)."""
    for tool_item, api_item in ((results.QueryHit, results.RankedDocument),
                                (results.Related, results.SimilarKeyword),
                                (results.Skill, results.MatchedSkill)):
        assert set(tool_item.__annotations__) <= set(api_item.__annotations__), tool_item.__name__
