"""``@path`` mentions: a knowledge-base document named in a message with ``@`` before its path
(``explain @notes/setup.md``) is attached to that turn: its indexed text (the first ``MAX_ATTACH_CHARS``
characters) goes into the system message, its path counts for the answer's citations.

A mention is ``@`` at the start of a word, followed by the path up to the next space (trailing
punctuation ``.,;:!?)"'`` is not part of it), so an e-mail address is not one. A path is resolved like
``kbindex show``'s: relative to the KB root (or absolute inside it); a path outside the KB root, or a file
that is not indexed, is refused with the reason (the turn goes on without it). Free mode has no
documents to attach.
"""

from __future__ import annotations

import re
from typing import Any

from kb_indexer.errors import KbError

MAX_ATTACH_CHARS = 12_000     # of each attached document
MAX_ATTACHMENTS = 5           # per turn
_MENTION = re.compile(r"(?<!\S)@([^\s@]+)")
_TRAILING = ".,;:!?)\"'"


def mentions(text: str) -> list[str]:
    """The ``@path`` mentions of ``text``, in order, each once."""
    found = (m.group(1).rstrip(_TRAILING) for m in _MENTION.finditer(text))
    return list(dict.fromkeys(p for p in found if p))


def attach(kb: Any, mode: str, text: str) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(attached documents {path, title, text, more}, refused mentions {path, reason})."""
    attached: list[dict[str, Any]] = []
    refused: list[dict[str, str]] = []
    for path in mentions(text):
        if mode != "kb":
            refused.append({"path": path, "reason": "free mode: no knowledge base to attach from"})
        elif len(attached) >= MAX_ATTACHMENTS:
            refused.append({"path": path, "reason": f"at most {MAX_ATTACHMENTS} documents a turn"})
        else:
            try:
                doc = kb.read(path, limit=MAX_ATTACH_CHARS)
            except KbError as exc:       # outside the KB root (usage), not indexed (not_found), bad path
                refused.append({"path": path, "reason": exc.message})
                continue
            attached.append({"path": doc["filepath"], "title": doc["title"], "text": doc["text"],
                             "more": doc["more"]})
    return attached, refused


def attachments_markdown(attached: list[dict[str, Any]]) -> str:
    if not attached:
        return ""
    parts = ["# Documents the user attached to this message"]
    for doc in attached:
        cut = "\n\n[… the rest of the document is not included]" if doc["more"] else ""
        parts.append(f"## {doc['title'] or doc['path']}\nPath: {doc['path']}\n\n{doc['text']}{cut}")
    return "\n\n".join(parts)


def event(attached: list[dict[str, Any]], refused: list[dict[str, str]]) -> dict[str, Any] | None:
    if not attached and not refused:
        return None
    return {"attached": [d["path"] for d in attached], "refused": refused}


def complete(paths: list[str], word: str) -> list[str]:
    """Completions of an ``@`` word (``word`` without the ``@``): the indexed paths that start with it,
    else those containing it."""
    starts = [p for p in paths if p.startswith(word)]
    return starts or [p for p in paths if word and word.lower() in p.lower()]
