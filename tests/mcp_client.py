"""A real MCP client (the SDK's, over stdio) against a `kbindex mcp --db` subprocess running this checkout."""

from __future__ import annotations

import json
import os

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import REPO, kbindex_exe


def server_params(db, *extra: str) -> StdioServerParameters:
    exe = kbindex_exe()
    return StdioServerParameters(command=exe[0], args=[*exe[1:], "mcp", "--db", str(getattr(db, "url", db)), *extra],
                                 env={"PYTHONPATH": str(REPO), **{k: v for k, v in os.environ.items()
                                                                  if k.startswith("KBINDEX_")}})


def session(db, body, cwd=None, extra: tuple[str, ...] = ()):
    """Run ``body(session)`` against a fresh `kbindex mcp *extra` over stdio (started in ``cwd``); its result."""
    params = server_params(db, *extra)
    if cwd is not None:
        params.cwd = cwd

    async def main():
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    return await body(s)
    return anyio.run(main)


def data(result) -> dict:
    """The structured result of a successful tool call."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)
