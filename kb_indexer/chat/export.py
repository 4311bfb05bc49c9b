"""``/export [md|json] [PATH]``: the current session written to a file, as markdown (a heading per
message) or JSON (``{session, source, exported_at, summary, messages}``). Without PATH:
``<session>.<md|json>`` in ``exports/`` of the chat's folder (:func:`kb_indexer.chat.source.data_dir`, beside the chat
store: not in the working folder, which is often a checkout); the format is md unless given or PATH ends in
``.json``. The file is private (mode 0600, like the chat store): it holds a person's conversation.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from kb_indexer.chat.source import data_dir, private_file
from kb_indexer.errors import UsageError

FORMATS = ("md", "json")


def parse_args(args: list[str], session: str) -> tuple[str, Path]:
    """(format, path) of ``/export`` arguments."""
    fmt: str | None = None
    rest = list(args)
    if rest and rest[0].lower() in FORMATS:
        fmt = rest.pop(0).lower()
    if len(rest) > 1:
        raise UsageError("/export takes at most a format (md or json) and a PATH")
    if rest:
        path = Path(os.path.expanduser(rest[0]))
        fmt = fmt or ("json" if path.suffix.lower() == ".json" else "md")
    else:
        fmt = fmt or "md"
        path = data_dir() / "exports" / f"{session}.{fmt}"
    return fmt, path


def markdown(data: dict[str, Any]) -> str:
    src = data.get("source") or {}
    where = f"knowledge base {src.get('name')}" if src.get("mode") == "kb" else "free mode"
    lines = [f"# kbindex chat {data['session']}", "", f"{where} · exported {data['exported_at']}", ""]
    if data.get("summary"):
        lines += ["## Summary of the earlier conversation", "", data["summary"].strip(), ""]
    for m in data["messages"]:
        role = str(m.get("role") or "").capitalize()
        lines += [f"## {role}", "", str(m.get("content") or "").rstrip(), ""]
    return "\n".join(lines)


def write(data: dict[str, Any], fmt: str, path: Path) -> Path:
    """Write the session ``data`` to ``path`` (a private file); its absolute path."""
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n" if fmt == "json" else markdown(data)
    path = path.absolute()
    if path.is_dir():
        raise UsageError(f"{path} is a folder: give a file name")
    try:
        private_file(path)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def session_data(session: str, source: dict[str, Any], shown: dict[str, Any] | None) -> dict[str, Any]:
    messages = [{"seq": m["seq"], "role": m["role"], "content": m["content"], "created_at": m.get("created_at")}
                for m in (shown or {}).get("messages") or []]
    summary = ((shown or {}).get("summary") or {}).get("text") if shown else None
    return {"session": session, "source": source, "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "summary": summary, "messages": messages}
