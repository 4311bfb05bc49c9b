"""Who may use ``kbindex mcp --transport http``: the bind address and the bearer token (standard library only,
so that a refusal is said before the MCP SDK is imported).

The token comes from the environment (``KBINDEX_MCP_TOKEN``) or from a file only the owner can read
(``--token-file``), never from the command line (where ``ps`` and shell histories show it); a file given
wins over the environment. A bind to anything but a loopback address needs a token; a loopback bind
with a token checks it too. Requests are checked in :mod:`kb_indexer.mcp.http`.

Tokens are named (:func:`read_tokens`): the file holds one per line, ``NAME:TOKEN`` (blank lines and lines
starting with ``#`` aside), and a line without a colon is a token named :data:`DEFAULT_NAME`. The name of the
token a request presents is its asker (docs/teams.md, "Who asked, and who may do what").
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from kb_indexer import settings
from kb_indexer.errors import UsageError

TOKEN_ENV = "KBINDEX_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_BYTES = 4096
#: A token file of many named tokens is at most this long.
MAX_FILE_BYTES = 64 * 1024
#: The key of an ASGI scope that holds the name of the token its request presented (set by
#: :mod:`kb_indexer.mcp.http`, read by :mod:`kb_indexer.mcp.server`).
ASKER = "kbindex.asker"
#: The name of a token given without one (a line without a colon, or ``$KBINDEX_MCP_TOKEN`` without a name).
DEFAULT_NAME = "mcp"
MAX_NAME_CHARS = 64
_MAKE_ONE = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: ``localhost`` or a loopback address (127.0.0.0/8, ::1).
    Any other name is not trusted to be loopback (it may resolve anywhere)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _from_file(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--token-file {path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"--token-file {path}: not a regular file")
    if os.name == "posix" and info.st_mode & 0o077:
        raise UsageError(f"--token-file {path}: other users may read or change it (mode "
                         f"{stat.S_IMODE(info.st_mode):o}); make it private: chmod 600 {path}")
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"--token-file {path}: longer than {MAX_FILE_BYTES} bytes: not a token file")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise UsageError(f"--token-file {path}: not UTF-8 text") from None


@dataclass(frozen=True)
class NamedToken:
    """A bearer token and the asker recorded for the requests that present it."""

    name: str
    token: str

    def __repr__(self) -> str:   # never the token itself (a traceback, a log)
        return f"NamedToken({self.name!r})"


def _named(line: str, where: str) -> NamedToken:
    """One line: ``NAME:TOKEN``, or a token without a name (:data:`DEFAULT_NAME`)."""
    name, colon, token = line.partition(":")
    if not colon:
        name, token = DEFAULT_NAME, line
    name, token = name.strip(), token.strip()
    if not name or len(name) > MAX_NAME_CHARS or not all(33 <= ord(c) <= 126 for c in name):
        raise UsageError(f"{where}: a token's name (before the colon) must be 1 to {MAX_NAME_CHARS} printable "
                         "ASCII characters without spaces")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"{where}: the token named {name} must be at least {MIN_TOKEN_CHARS} characters (make "
                         f"one with: {_MAKE_ONE})")
    if len(token) > MAX_TOKEN_BYTES or not all(33 <= ord(c) <= 126 for c in token):
        raise UsageError(f"{where}: the token named {name} must be printable ASCII without spaces, at most "
                         f"{MAX_TOKEN_BYTES} characters (make one with: {_MAKE_ONE})")
    return NamedToken(name, token)


def read_tokens(token_file: Path | None) -> list[NamedToken] | None:
    """The named bearer tokens (from ``token_file`` if given, else ``$KBINDEX_MCP_TOKEN``), or None when neither
    gives one. A line that is not a token (too short, not printable, a bad name) or a token given twice is bad
    usage; a name may have several tokens (one per client, or an old and a new one)."""
    where = f"--token-file {token_file}" if token_file is not None else TOKEN_ENV
    text = _from_file(token_file) if token_file is not None else settings.text(TOKEN_ENV)
    if token_file is None and not text:
        return None
    lines = [line.strip() for line in text.splitlines()]
    tokens = [_named(line, where) for line in lines if line and not line.startswith("#")]
    if not tokens:
        raise UsageError(f"{where}: no token in it (one per line, NAME:TOKEN; make one with: {_MAKE_ONE})")
    if len({t.token for t in tokens}) < len(tokens):
        raise UsageError(f"{where}: the same token is given twice (each client needs a token of its own)")
    return tokens


def check_bind(host: str, tokens: Sequence[NamedToken] | None) -> None:
    """Refuse to serve a non-loopback address without a token."""
    if not tokens and not is_loopback(host):
        raise UsageError(f"--host {host} is reachable from other machines: set a bearer token first, in "
                         f"{TOKEN_ENV} or in a file given with --token-file (mode 600); make one with: {_MAKE_ONE}")


def presented(header: bytes, tokens: Sequence[NamedToken]) -> str | None:
    """The name of the token an ``Authorization`` header value carries (``Bearer <token>``), or None. Every
    token is compared, each in constant time, so the time taken says neither whether nor which one matched."""
    scheme, _, given = header.strip().partition(b" ")
    given = given.strip()
    found = None
    for named in tokens:
        if hmac.compare_digest(given, named.token.encode("ascii")) and found is None:
            found = named.name
    return found if scheme.lower() == b"bearer" else None
