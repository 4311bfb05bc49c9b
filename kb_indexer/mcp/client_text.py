"""What an MCP client is told of the server's own places: an error it is shown names no folder of the server's.

A kbindex error speaks to the user who ran the command, so it names the index (``The index
/srv/kb/kbindex.db is busy``), its folder or the knowledge-base root; a client of ``kbindex mcp``, maybe on
another machine behind the token, has no business knowing them (its paths are relative to the root anyway).
:func:`hidden` gives the message with the index file named by its file name only, the index's folder and the
knowledge-base root as ``[server folder]``, and a PostgreSQL server's URL (its password already hidden) as
``[server database]``. What the client sent (a path of its own, in its arguments) is left as it is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from kb_indexer.config import DbArg, DbUrl, find_db
from kb_indexer.errors import KbError

FOLDER = "[server folder]"
DATABASE = "[server database]"


def places(db: DbArg, root: Path | None = None) -> dict[str, str]:
    """``{what a message may name: what the client reads instead}`` for the index ``db`` (None: found as the
    server finds it) and the knowledge-base ``root`` (when known)."""
    try:
        target = find_db(db)
    except (KbError, OSError, ValueError):   # an index that cannot be found names nothing to hide
        target = None
    out: dict[str, str] = {}
    if isinstance(target, DbUrl):
        out[str(target)] = DATABASE
    elif target is not None:
        for form in _forms(target):
            out[form] = target.name
        for form in _forms(target.parent):
            out.setdefault(form, FOLDER)
    if root is not None:
        for form in _forms(root):
            out.setdefault(form, FOLDER)
    return out


def hidden(message: str, named: dict[str, str], sent: Iterable[str] = ()) -> str:
    """``message`` with each of ``named`` replaced, the longest first (a file before its folder); what the client
    ``sent`` (its arguments) is kept whole where the message quotes it."""
    kept = sorted({s for s in sent if s and any(place in s for place in named)}, key=len, reverse=True)
    marks = [f"\0{i}\0" for i in range(len(kept))]
    for text, mark in zip(kept, marks):
        message = message.replace(text, mark)
    for place in sorted(named, key=len, reverse=True):
        if place in message:
            message = message.replace(place, named[place])
    for text, mark in zip(kept, marks):
        message = message.replace(mark, text)
    return message


def strings(value: object) -> Iterator[str]:
    """The strings of a call's arguments (in lists and mappings too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


def _forms(path: Path) -> set[str]:
    """The ways a message may write ``path`` (as given, absolute, links resolved); never the filesystem root."""
    forms = {str(path), str(path.absolute())}
    try:
        forms.add(os.path.realpath(path))
    except (OSError, ValueError):
        pass
    return {f for f in forms if os.path.isabs(f) and f.rstrip(os.sep)}
