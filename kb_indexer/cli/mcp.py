"""mcp: serve the index to coding agents over the Model Context Protocol (needs the ``mcp`` extra)."""

from __future__ import annotations

import importlib.util
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from kb_indexer import __version__
from kb_indexer.cli.app import DbOpt, app
from kb_indexer.cli.output import Format, echo
from kb_indexer.config import DbTarget, DbUrl, find_db, named_db
from kb_indexer.errors import KbError, NotInitialisedError
from kb_indexer.limits import DEFAULT_HTTP_HEADER_TIMEOUT_S, DEFAULT_HTTP_MAX_CONNECTIONS, HttpLimits
from kb_indexer.mcp.client_config import hint, render
from kb_indexer.mcp.early import answer_first_line

INSTALL_HINT = ("kbindex mcp needs the MCP SDK, an optional extra: pip install 'kbindex[mcp]' "
                "(or: pip install 'mcp>=2')")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


class Client(str, Enum):
    claude = "claude"
    codex = "codex"
    cursor = "cursor"
    vscode = "vscode"


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


@app.command("mcp", short_help="Serve the knowledge base to agents over MCP")
def mcp(
    db: DbOpt = None,
    transport: Annotated[Transport, typer.Option("--transport", help="stdio (an agent starts the server) or "
                                                 "http (streamable HTTP at http://HOST:PORT/mcp, many clients "
                                                 "at once).")] = Transport.stdio,
    host: Annotated[Optional[str], typer.Option("--host", help="Address the http transport binds (default "
                                                "127.0.0.1). Any non-loopback address needs a bearer token.",
                                                show_default=False)] = None,
    port: Annotated[Optional[int], typer.Option("--port", min=1, max=65535,
                                                help="Port of the http transport (1 to 65535; default 8765).",
                                                show_default=False)] = None,
    token_file: Annotated[Optional[Path], typer.Option("--token-file", help="File holding the http transport's "
                                                       "bearer tokens, NAME:TOKEN a line, NAME the asker "
                                                       "(mode 600); else $KBINDEX_MCP_TOKEN.",
                                                       show_default=False)] = None,
    max_connections: Annotated[Optional[int], typer.Option(
        "--max-connections", min=1, max=1_000_000, show_default=False,
        help=f"Open connections the http transport keeps at most (default {DEFAULT_HTTP_MAX_CONNECTIONS}, and at "
             "most half the open-file limit, ulimit -n); one more is closed at once.")] = None,
    header_timeout: Annotated[Optional[float], typer.Option(
        "--header-timeout", min=0.1, max=3600, show_default=False,
        help=f"Seconds a request's headers may take to arrive over the http transport (default "
             f"{DEFAULT_HTTP_HEADER_TIMEOUT_S:g}), and its body after them (a second more per 16 KiB); then the "
             "connection is closed.")] = None,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Record nothing: no kb_feedback tool, queries not recorded (query_id null), no skill "
                            "sessions; the index is opened read-only.")] = False,
    print_config: Annotated[Optional[Client], typer.Option(
        "--print-config", case_sensitive=False, show_default=False,
        help="Print a ready configuration snippet for this MCP client (claude, codex, cursor, vscode) with the "
             "absolute path of this kbindex and of the index, then exit.")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", case_sensitive=False,
                                           help="How a start-up error is printed on stderr: json (for agents) "
                                                "or table (text). The protocol itself is always JSON-RPC.")
                      ] = Format.table,
) -> None:
    """Serve the knowledge base, its skills and its feedback loop over MCP (tools kb_query, kb_get,
    kb_similar, kb_feedback, skills_match; resources skill:// and kb://). Logs go to stderr only."""
    given = [name for name, value in (("--host", host), ("--port", port), ("--token-file", token_file),
                                      ("--max-connections", max_connections), ("--header-timeout", header_timeout))
             if value is not None]
    if transport is Transport.stdio and given:
        raise typer.BadParameter("an option of --transport http only", param_hint=f"'{given[0]}'")
    if print_config is not None:
        _print_config(print_config.value, db, given, read_only)
        return
    tokens = None
    if transport is Transport.http:
        # lazy: the http transport's access rules (ipaddress, hmac): kept off the stdio start
        from kb_indexer.mcp.access import check_bind, read_tokens

        tokens = read_tokens(token_file)
        check_bind(host or DEFAULT_HOST, tokens)
    try:  # found, not imported: importing it takes most of a second (see kb_indexer.mcp.early)
        sdk = importlib.util.find_spec("mcp")
    except (ImportError, ValueError):
        sdk = None
    if sdk is None:
        raise KbError(INSTALL_HINT, code="missing_extra")

    # Resolved once, so an index that cannot be found is said at start, not per request (a KbError is
    # printed by the CLI's error handler: terminal-safe text, or a JSON object under --format json).
    db_path = find_db(db)
    if not isinstance(db_path, DbUrl) and not db_path.is_file():
        raise NotInitialisedError(f"no index at {db_path} (create one with `kbindex init`, or pass --db)")
    served = db_path if named_db(db) else None   # found, not named: each request finds it (and confines it) again
    if transport is Transport.stdio:
        _serve_stdio(served, read_only)
        return
    limits = HttpLimits(max_connections, DEFAULT_HTTP_HEADER_TIMEOUT_S if header_timeout is None else header_timeout)
    _serve_http(served, host or DEFAULT_HOST, port or DEFAULT_PORT, tokens, read_only, limits)


def _print_config(client: str, db: Optional[str], given: list[str], read_only: bool) -> None:
    """The snippet on stdout, where it goes on stderr; for the stdio transport (what these clients start)."""
    if given:
        raise typer.BadParameter("prints the stdio server's configuration: drop the http options",
                                 param_hint="'--print-config'")
    db_path = find_db(db)
    if not isinstance(db_path, DbUrl) and not db_path.is_file():
        raise NotInitialisedError(f"no index at {db_path} (create one with `kbindex init`, or pass --db)")
    echo(hint(client, db_path), err=True)
    sys.stdout.write(render(client, db_path, read_only=read_only))


def _serve_stdio(db_path: DbTarget | None, read_only: bool) -> None:
    """The first line of stdin is read (and an initialize request answered) before the SDK is imported."""
    first_line, answered = answer_first_line(__version__, read_only=read_only)
    try:
        import anyio  # lazy: anyio comes with the optional extra mcp

        # lazy: the MCP SDK (extra mcp), after the first request is answered
        from kb_indexer.mcp.server import build_server
        from kb_indexer.mcp.stdio import serve  # lazy: the MCP SDK (extra mcp), after the first request is answered
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        raise typer.Exit(1) from None
    server = build_server(db_path, read_only=read_only)
    with server.serving():   # on PostgreSQL: the pool of connections the requests share
        anyio.run(serve, server, first_line, answered)


def _serve_http(db_path: Any, host: str, port: int, tokens: Any, read_only: bool,
                limits: HttpLimits) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp (``db_path``: the index as found, whichever engine holds it)."""
    # lazy: the MCP SDK (the optional extra mcp; about a second to import)
    from kb_indexer.mcp.server import build_server
    from kb_indexer.mcp.http import serve  # lazy: uvicorn and the SDK's HTTP app (extra mcp)

    try:
        server = build_server(db_path, read_only=read_only)
        with server.serving():   # on PostgreSQL: the pool of connections the requests share
            serve(server, host, port, tokens, limits)
    except SystemExit as exc:   # uvicorn exits 3 when it cannot start (port in use): an error, exit 1
        if exc.code not in (0, None):
            echo(f"Error: the http server could not start on {host}:{port} (see the message above)\n", err=True)
            raise typer.Exit(1) from None
        raise
