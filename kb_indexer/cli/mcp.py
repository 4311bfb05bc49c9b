"""mcp: serve the index to coding agents over the Model Context Protocol (needs the ``mcp`` extra)."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from kb_indexer.cli.app import DbOpt, app
from kb_indexer.cli.output import echo

INSTALL_HINT = ("kbindex mcp needs the MCP SDK, an optional extra: pip install 'kbindex[mcp]' "
                "(or: pip install 'mcp>=2')")


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


@app.command("mcp")
def mcp(
    db: DbOpt = None,
    transport: Annotated[Transport, typer.Option("--transport", help="stdio (an agent starts the server) or "
                                                 "http (streamable HTTP on --port).")] = Transport.stdio,
    port: Annotated[int, typer.Option("--port", help="Port of the http transport.")] = 8765,
) -> None:
    """Serve the knowledge base, its skills and its feedback loop over MCP (tools kb_query, kb_get,
    kb_similar, kb_feedback, skills_match; resources skill:// and kb://). Logs go to stderr only."""
    try:
        import mcp.server  # noqa: F401  (the optional SDK; imported only by this command)
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        raise typer.Exit(1)
    from kb_indexer.config import find_db
    from kb_indexer.errors import KbError
    from kb_indexer.mcp.server import build_server

    try:  # resolved once, so an index that cannot be found is said at start, not per request
        db_path = find_db(db)
    except KbError as exc:
        echo(f"Error: {exc}\n", err=True)  # the path is the user's text: terminal-safe
        raise typer.Exit(1)
    if not db_path.is_file():
        echo(f"Error: no index at {db_path} (create one with `kbindex init`, or pass --db)\n", err=True)
        raise typer.Exit(1)
    server = build_server(db_path)
    if transport is Transport.stdio:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)
