"""The stdio server's first answer, before the MCP SDK is imported (standard library only).

Importing the SDK costs most of a second (``import mcp`` loads its client, server, HTTP stack and some
500 pydantic models); an agent waits for the ``initialize`` answer before anything else. So ``kbindex
mcp`` reads the first line of stdin itself and, when it is an ``initialize`` request for one of the
handshake protocol versions, answers it at once with what the SDK would answer (this server's fixed
capabilities, name, version and instructions, the version echoed). Then the SDK starts and is given that
same line first (:mod:`kb_indexer.mcp.stdio`), so its session is initialised as usual; its own answer to
it is not sent again but compared with the early one (a difference is reported on stderr). Any other
first line (another method, another protocol version, not JSON, params of a shape the SDK might refuse,
a line longer than ``MAX_FIRST_LINE``) is answered by the SDK alone.
"""

from __future__ import annotations

import json
import os
from typing import Any

INSTRUCTIONS = ("kbindex: a searchable knowledge base. kb_query finds documents (give kb_feedback on its "
                "query_id: it improves later answers), kb_get reads one, kb_similar lists related keywords, "
                "skills_match picks skills for a message. Results are paged: pass next_cursor back as cursor.")
#: What a server started with ``--read-only`` tells the client (it has no kb_feedback, records nothing).
READ_ONLY_INSTRUCTIONS = ("kbindex: a searchable knowledge base, served read-only (nothing is recorded). kb_query "
                          "finds documents, kb_get reads one, kb_similar lists related keywords, skills_match picks "
                          "skills for a message. Results are paged: pass next_cursor back as cursor.")
NAME = "kbindex"
# The protocol versions of the initialize handshake whose answer is the one below (the SDK echoes them).
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES = {"prompts": {"listChanged": False}, "resources": {"listChanged": False, "subscribe": False},
                "tools": {"listChanged": False}}
MAX_FIRST_LINE = 1 << 20


def read_first_line(fd: int = 0) -> bytes:
    """The first line of ``fd`` (up to its newline, at most ``MAX_FIRST_LINE`` bytes), read byte by byte so
    that nothing after it is taken from the descriptor the SDK reads next."""
    out = bytearray()
    while len(out) < MAX_FIRST_LINE:
        byte = os.read(fd, 1)
        if not byte:
            break
        out += byte
        if byte == b"\n":
            break
    return bytes(out)


# What an initialize request may hold to be answered early: only shapes the SDK surely accepts. Anything
# else (another key, a value of another type, ``icons``, ``_meta``) is left to the SDK, which validates it.
_PARAMS = {"protocolVersion", "capabilities", "clientInfo"}
_CLIENT_TEXTS = {"name", "version", "title", "description", "websiteUrl"}
_EMPTY_SUBS = {"sampling": {"context", "tools"}, "elicitation": {"form", "url"}}


def _capability_ok(key: str, value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if key == "roots":
        return set(value) <= {"listChanged"} and all(isinstance(v, bool) for v in value.values())
    if key in _EMPTY_SUBS:
        return set(value) <= _EMPTY_SUBS[key] and all(v == {} for v in value.values())
    if key == "experimental":
        return all(isinstance(v, dict) for v in value.values())
    return False


def _surely_valid(params: dict[str, Any]) -> bool:
    """Whether the SDK surely accepts these initialize params (False: maybe not; the SDK answers)."""
    caps, client = params.get("capabilities"), params.get("clientInfo")
    if not set(params) <= _PARAMS or not isinstance(caps, dict) or not isinstance(client, dict):
        return False
    if not all(_capability_ok(k, v) for k, v in caps.items()):
        return False
    return {"name", "version"} <= set(client) <= _CLIENT_TEXTS and all(isinstance(v, str) for v in client.values())


def early_answer(line: bytes, version: str, read_only: bool = False) -> dict[str, Any] | None:
    """The answer to ``line`` when it is an ``initialize`` request this module answers; else None."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("method") != "initialize":
        return None
    params, id_ = msg.get("params"), msg.get("id")
    if not isinstance(params, dict) or isinstance(id_, bool) or not isinstance(id_, (int, str)):
        return None
    if params.get("protocolVersion") not in HANDSHAKE_VERSIONS or not _surely_valid(params):
        return None
    return {"jsonrpc": "2.0", "id": id_, "result": {
        "capabilities": CAPABILITIES, "instructions": READ_ONLY_INSTRUCTIONS if read_only else INSTRUCTIONS,
        "protocolVersion": params["protocolVersion"],
        "serverInfo": {"name": NAME, "version": version}}}


def answer_first_line(version: str, fd_in: int = 0, fd_out: int = 1,
                      read_only: bool = False) -> tuple[bytes, dict[str, Any] | None]:
    """Read the first line and answer it when it is a handshake this module answers: (line, answer or None)."""
    line = read_first_line(fd_in)
    # a line cut at MAX_FIRST_LINE is not answered here: the SDK is given it whole (mcp.stdio)
    answer = early_answer(line, version, read_only) if len(line) < MAX_FIRST_LINE else None
    if answer is not None:
        data = (json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        while data:
            data = data[os.write(fd_out, data):]
    return line, answer
