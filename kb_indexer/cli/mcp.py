"""mcp: serve the index to coding agents over the Model Context Protocol (needs the ``mcp`` extra)."""

from __future__ import annotations

import importlib.util
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from kb_indexer import __version__
from kb_indexer.cli.app import DbOpt, app
from kb_indexer.cli.output import echo
from kb_indexer.config import DbTarget, DbUrl, find_db
from kb_indexer.errors import KbError
from kb_indexer.mcp.early import answer_first_line

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
    port: Annotated[int, typer.Option("--port", min=1, max=65535,
                                      help="Port of the http transport (1 to 65535).")] = 8765,
) -> None:
    """Serve the knowledge base, its skills and its feedback loop over MCP (tools kb_query, kb_get,
    kb_similar, kb_feedback, skills_match; resources skill:// and kb://). Logs go to stderr only."""
    try:  # found, not imported: importing it takes most of a second (see kb_indexer.mcp.early)
        sdk = importlib.util.find_spec("mcp")
    except (ImportError, ValueError):
        sdk = None
    if sdk is None:
        print(INSTALL_HINT, file=sys.stderr)
        raise typer.Exit(1)

    try:  # resolved once, so an index that cannot be found is said at start, not per request
        db_path = find_db(db)
    except KbError as exc:
        echo(f"Error: {exc}\n", err=True)  # the path is the user's text: terminal-safe
        raise typer.Exit(1)
    if not isinstance(db_path, DbUrl) and not db_path.is_file():
        echo(f"Error: no index at {db_path} (create one with `kbindex init`, or pass --db)\n", err=True)
        raise typer.Exit(1)
    if transport is Transport.stdio:
        _serve_stdio(db_path)
        return
    # lazy: the MCP SDK (the optional extra mcp; about a second to import)
    from kb_indexer.mcp.server import build_server

    server = build_server(db_path)
    try:
        server.run("streamable-http", host="127.0.0.1", port=port)
    except SystemExit as exc:   # uvicorn exits 3 when it cannot start (port in use): an error, exit 1
        if exc.code not in (0, None):
            print(f"Error: the http server could not start on 127.0.0.1:{port} (see the message above)",
                  file=sys.stderr)
            raise typer.Exit(1) from None
        raise


def _serve_stdio(db_path: DbTarget) -> None:
    """The first line of stdin is read (and an initialize request answered) before the SDK is imported."""
    first_line, answered = answer_first_line(__version__)
    try:
        import anyio  # lazy: anyio comes with the optional extra mcp

        # lazy: the MCP SDK (extra mcp), after the first request is answered
        from kb_indexer.mcp.server import build_server
        from kb_indexer.mcp.stdio import serve  # lazy: the MCP SDK (extra mcp), after the first request is answered
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        raise typer.Exit(1) from None
    anyio.run(serve, build_server(db_path), first_line, answered)
