"""Who may use ``kbindex mcp --transport http``: the bind address and the bearer token (standard library only,
so that a refusal is said before the MCP SDK is imported).

The token comes from the environment (``KBINDEX_MCP_TOKEN``) or from a file only the owner can read
(``--token-file``), never from the command line (where ``ps`` and shell histories show it); a file given
wins over the environment. A bind to anything but a loopback address needs a token; a loopback bind
with a token checks it too. Requests are checked in :mod:`kb_indexer.mcp.http`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import stat
from pathlib import Path
from typing import Mapping

from kb_indexer.errors import UsageError

TOKEN_ENV = "KBINDEX_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_BYTES = 4096
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
            data = fh.read(MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--token-file {path}: cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"--token-file {path}: not a regular file")
    if os.name == "posix" and info.st_mode & 0o077:
        raise UsageError(f"--token-file {path}: other users may read or change it (mode "
                         f"{stat.S_IMODE(info.st_mode):o}); make it private: chmod 600 {path}")
    if len(data) > MAX_TOKEN_BYTES:
        raise UsageError(f"--token-file {path}: longer than {MAX_TOKEN_BYTES} bytes: not a token")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise UsageError(f"--token-file {path}: not UTF-8 text") from None


def read_token(token_file: Path | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token (from ``token_file`` if given, else ``$KBINDEX_MCP_TOKEN``), or None when neither
    gives one. A token that is too short or that no HTTP header can carry is bad usage."""
    where = f"--token-file {token_file}" if token_file is not None else TOKEN_ENV
    token = _from_file(token_file) if token_file is not None else environ.get(TOKEN_ENV, "").strip()
    if token_file is None and not token:
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"{where}: the token must be at least {MIN_TOKEN_CHARS} characters (make one with: "
                         f"{_MAKE_ONE})")
    if not all(33 <= ord(c) <= 126 for c in token):
        raise UsageError(f"{where}: the token must be printable ASCII without spaces (make one with: {_MAKE_ONE})")
    return token


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve a non-loopback address without a token."""
    if token is None and not is_loopback(host):
        raise UsageError(f"--host {host} is reachable from other machines: set a bearer token first, in "
                         f"{TOKEN_ENV} or in a file given with --token-file (mode 600); make one with: {_MAKE_ONE}")


def authorised(header: bytes, token: bytes) -> bool:
    """Whether an ``Authorization`` header value carries ``Bearer <token>`` (compared in constant time)."""
    scheme, _, given = header.strip().partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token)
