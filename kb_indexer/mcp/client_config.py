"""``kbindex mcp --print-config CLIENT``: a ready snippet that registers this kbindex as an MCP server in a
common client, with the absolute path of the command that is running and of the index it would serve.

Where each goes (the snippet itself is printed on stdout, the hint on stderr):

* ``claude``: Claude Desktop's ``claude_desktop_config.json`` or a project's ``.mcp.json`` (Claude Code), key
  ``mcpServers``; Claude Code can also take it with ``claude mcp add-json kbindex '<the inner object>'``.
* ``cursor``: ``~/.cursor/mcp.json`` or a project's ``.cursor/mcp.json``, key ``mcpServers``.
* ``vscode``: a workspace's ``.vscode/mcp.json``, key ``servers`` with ``"type": "stdio"``.
* ``codex``: ``~/.codex/config.toml``, a ``[mcp_servers.kbindex]`` table.

A PostgreSQL index is passed as ``KBINDEX_DB`` in the server's environment with its password left out (the
client's machine supplies it, e.g. from ``~/.pgpass`` or ``PGPASSWORD``): a config file is no place for it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from kb_indexer.config import DbTarget, DbUrl

CLIENTS = ("claude", "codex", "cursor", "vscode")
NAME = "kbindex"

WHERE = {
    "claude": "Claude Desktop: claude_desktop_config.json; Claude Code: .mcp.json in the project",
    "cursor": "~/.cursor/mcp.json, or .cursor/mcp.json in the project",
    "vscode": ".vscode/mcp.json in the workspace",
    "codex": "~/.codex/config.toml",
}


def this_command(argv0: str | None = None) -> list[str]:
    """The absolute command that runs this kbindex: its console script when that is what runs (or a
    checkout's ``kbindex.py`` with this Python), else this Python with ``-m kb_indexer``."""
    script = Path(argv0 if argv0 is not None else sys.argv[0])
    python = str(Path(sys.executable).absolute())
    if script.name in ("kbindex", "kbindex.exe") and script.is_file():
        return [str(script.absolute())]
    if script.name == "kbindex.py" and script.is_file():
        return [python, str(script.absolute())]
    return [python, "-m", "kb_indexer"]


def without_password(url: str) -> tuple[str, bool]:
    """``url`` without its password (``user:PASSWORD@`` or a ``password=`` parameter), and whether it had one."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    params = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in params if k.lower() != "password"]
    netloc = (user + at + host) if at else parts.netloc
    had = bool(colon) or len(kept) != len(params)
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(kept))), had


def server_entry(db: DbTarget, argv0: str | None = None, read_only: bool = False) -> dict[str, Any]:
    """``{"command", "args", "env"}`` for a stdio server over ``db`` (``read_only``: ``mcp --read-only``)."""
    command, *prefix = this_command(argv0)
    mcp = ["mcp", "--read-only"] if read_only else ["mcp"]
    if isinstance(db, DbUrl):
        return {"command": command, "args": [*prefix, *mcp], "env": {"KBINDEX_DB": without_password(db.url)[0]}}
    return {"command": command, "args": [*prefix, *mcp, "--db", str(Path(db).resolve())], "env": {}}


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)   # a JSON string is a valid TOML basic string


def render(client: str, db: DbTarget, argv0: str | None = None, *, read_only: bool = False) -> str:
    """The snippet for ``client`` (one of :data:`CLIENTS`)."""
    entry = server_entry(db, argv0, read_only)
    if client == "codex":
        lines = [f"[mcp_servers.{NAME}]", f"command = {_toml_string(entry['command'])}",
                 "args = [" + ", ".join(_toml_string(a) for a in entry["args"]) + "]"]
        if entry["env"]:
            lines.append("env = { " + ", ".join(f"{k} = {_toml_string(v)}" for k, v in entry["env"].items()) + " }")
        return "\n".join(lines) + "\n"
    server = {k: v for k, v in entry.items() if v or k != "env"}
    if client == "vscode":
        return json.dumps({"servers": {NAME: {"type": "stdio", **server}}}, indent=2) + "\n"
    return json.dumps({"mcpServers": {NAME: server}}, indent=2) + "\n"


def hint(client: str, db: DbTarget) -> str:
    text = f"kbindex: add this to {WHERE[client]}"
    if isinstance(db, DbUrl) and without_password(db.url)[1]:
        text += "; the index's password is left out (give it with ~/.pgpass or PGPASSWORD)"
    return text + os.linesep
