"""Which files belong to the knowledge base: the one rule, used by ``add``, ``sync`` and the stale check.

A document is a regular file (or a symlink to one inside the root) named ``*.md`` or ``*.markdown``
(any case) whose name does not start with ``.``, in a folder none of whose path parts (below the KB
root) starts with ``.`` or is ``__pycache__``. FIFOs, devices and sockets are never documents: reading
one could block forever. Keywords files (``*.keywords.json``) belong to the document beside them.
"""

from __future__ import annotations

import os
import stat
from pathlib import PurePosixPath

MARKDOWN_SUFFIXES = (".md", ".markdown")
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})


def is_skipped_dir(name: str) -> bool:
    """A folder sync never enters (hidden, ``__pycache__``, ``node_modules``)."""
    return name.startswith(".") or name in SKIPPED_DIRS


def is_document_name(name: str) -> bool:
    """A file name sync indexes (``.md`` / ``.markdown``, not hidden)."""
    return not name.startswith(".") and name.lower().endswith(MARKDOWN_SUFFIXES)


def excluded_reason(rel: str) -> str | None:
    """Why the stored path ``rel`` (POSIX, relative to the KB root) is not part of the knowledge base, or
    None when it is (by name only; see :func:`regular_file_problem` for the file itself)."""
    parts = PurePosixPath(rel).parts
    if not parts:
        return "an empty path"
    for folder in parts[:-1]:
        if is_skipped_dir(folder):
            return f"it is inside {folder}/, a folder the knowledge base skips (hidden or generated)"
    name = parts[-1]
    if name.startswith("."):
        return "hidden files are not part of the knowledge base"
    if not name.lower().endswith(MARKDOWN_SUFFIXES):
        return "not a markdown file (.md or .markdown)"
    return None


def regular_file_problem(path: str | os.PathLike[str]) -> str | None:
    """None for a regular file (following symlinks); else what it is (FIFO, device, socket, folder,
    missing). Never opens the file, so a FIFO cannot block."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "not found (deleted, or a dangling symlink)"
    except OSError as exc:  # a symlink loop, a name too long, permissions
        return f"cannot be read: {exc.strerror or exc}"
    return mode_problem(mode)


def mode_problem(mode: int) -> str | None:
    """None for a regular file's ``st_mode``; else what the file is."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    return "not a regular file"
