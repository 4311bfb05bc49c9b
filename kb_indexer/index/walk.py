"""One walk of the knowledge base: every document sync would index, with its stat signature.

Used by ``sync`` (what to re-read) and the stale check (what changed), so both see the same files by the
rules of :mod:`kb_indexer.index.membership`. One ``os.scandir`` per folder and one ``stat`` per document
(two with a keywords file); nothing is read and only symlinks are resolved. Symlinked folders are not
followed. A file that cannot be a document (a name that is not valid UTF-8, a FIFO or socket named
``*.md``, a symlink loop or a symlink leading outside the root) is reported in ``problems`` and skipped,
never raised: one bad file must not stop a walk.
"""

from __future__ import annotations

from typing import Any

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kb_indexer.index.membership import MARKDOWN_SUFFIXES, is_document_name, is_skipped_dir, regular_file_problem
from kb_indexer.index.paths import KEYWORDS_SUFFIX, sig_of
from kb_indexer.beneath import resolves_outside


@dataclass
class Walk:
    """``files``: relative POSIX path -> stat signature (as :func:`kb_indexer.index.paths.stat_sig` with the
    default keywords file); ``problems``: ``{"file", "message"}`` for entries skipped; ``orphans``: keywords
    files with no markdown document beside them; ``unreadable``: documents that are there but cannot be read
    now (a FIFO, permissions): sync keeps what it stored for them; ``folders``: how many folders were read;
    ``folder_mtimes``: each folder's (``""``, ``"a/"``, ``"a/b/"``) mtime in ns, taken before it was listed;
    ``folder_marks``: each folder's :func:`entries_mark` as listed; ``subfolders``: the folders found but
    not entered (``recursive=False``)."""

    files: dict[str, str] = field(default_factory=dict)
    problems: list[dict[str, str]] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    unreadable: set[str] = field(default_factory=set)
    folders: int = 0
    folder_mtimes: dict[str, int] = field(default_factory=dict)
    folder_marks: dict[str, str] = field(default_factory=dict)
    subfolders: list[str] = field(default_factory=list)


def printable(name: str) -> str:
    """A file name as text that can be shown and stored (undecodable bytes as ``\\xNN``)."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def _valid_name(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False




def scan(root: Path, base: str = "", *, recursive: bool = True, marks: bool = True) -> Walk:
    """Walk ``root / base`` (``base``: a relative POSIX folder, "" for the whole KB); with
    ``recursive=False`` only that folder (its subfolders are listed in ``subfolders``); with ``marks``
    each folder's :func:`entries_mark` too (what sync records for the stale check; the check's own walks
    leave them out)."""
    walk = Walk()
    root_real = os.path.realpath(root)
    start = os.path.join(root, base) if base else str(root)
    prefix = base.rstrip("/") + "/" if base else ""
    stack = [(start, prefix)]
    while stack:
        folder, pre = stack.pop()
        try:
            walk.folder_mtimes[pre] = os.stat(folder).st_mtime_ns  # before listing: a later change shows
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            walk.problems.append({"file": printable(pre) or ".", "message": f"cannot list folder: {exc.strerror}"})
            walk.folder_mtimes.pop(pre, None)
            continue
        walk.folders += 1
        if marks:
            walk.folder_marks[pre] = entries_mark(entries)
        found: list[Any] = []
        _scan_folder(walk, entries, pre, root_real, found)
        if recursive:
            stack.extend(found)
        else:
            walk.subfolders.extend(sub for _, sub in found)
    return walk


def entries_mark(entries: list[os.DirEntry[str]]) -> str:
    """A digest of a folder's entries, their names and inode numbers (from the listing: no ``stat``). An
    entry added, removed, renamed or replaced (an editor's save by rename) changes it, even when the folder's
    mtime does not (a change in the same mtime tick as an earlier listing); an in-place edit does not."""
    import hashlib

    listing = "\n".join(sorted(f"{e.name}\0{e.inode()}" for e in entries))
    return hashlib.blake2b(listing.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def list_mark(folder: str) -> str | None:
    """:func:`entries_mark` of ``folder`` now (None: it cannot be listed)."""
    try:
        with os.scandir(folder) as it:
            return entries_mark(list(it))
    except OSError:
        return None


def _scan_folder(walk: Walk, entries: list[os.DirEntry[str]], pre: str, root_real: str, stack: list[Any]) -> None:
    docs: list[os.DirEntry[str]] = []
    keywords: dict[str, os.DirEntry[str]] = {}
    for e in entries:
        name = e.name
        if not _valid_name(name):
            if is_skipped_dir(name) and _is_dir(e):
                continue
            if is_document_name(name) or name.endswith(KEYWORDS_SUFFIX) or _is_dir(e):
                walk.problems.append({"file": pre + printable(name),
                                      "message": "the file name is not valid UTF-8; rename it to index it"})
            continue
        if name.endswith(KEYWORDS_SUFFIX):
            keywords[name] = e
        elif is_document_name(name):
            docs.append(e)
        elif not is_skipped_dir(name) and _is_dir(e) and not e.is_symlink():
            stack.append((e.path, pre + name + "/"))
    stems = set()
    for e in docs:
        stem = _stem(e.name)
        stems.add(stem)
        _add_document(walk, e, pre, root_real, keywords.get(stem + KEYWORDS_SUFFIX))
    for name in keywords:
        if name[: -len(KEYWORDS_SUFFIX)] not in stems:
            walk.orphans.append(pre + name)


def _stem(name: str) -> str:
    lower = name.lower()
    for suffix in MARKDOWN_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _os_problem(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not found (deleted, or a dangling symlink)"
    if exc.errno == errno.ELOOP:
        return "a symlink loop (the link leads back to itself)"
    return f"cannot be read: {exc.strerror or exc}"


def _is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _add_document(walk: Walk, e: os.DirEntry[str], pre: str, root_real: str, kw: os.DirEntry[str] | None) -> None:
    rel = pre + e.name
    try:
        if e.is_symlink() and resolves_outside(root_real, e.path):
            walk.problems.append({"file": rel, "message": "resolves outside the knowledge-base root"})
            return
        st = e.stat()
    except OSError as exc:  # a symlink loop, a dangling symlink, a name too long, permissions
        walk.problems.append({"file": rel, "message": _os_problem(exc)})
        if exc.errno not in (errno.ENOENT, errno.ELOOP):
            walk.unreadable.add(rel)
        return
    if stat.S_ISDIR(st.st_mode):
        return  # a folder named like a document (a symlink to one: not followed)
    if not stat.S_ISREG(st.st_mode):
        walk.problems.append({"file": rel, "message": f"is {regular_file_problem(e.path)}"})
        walk.unreadable.add(rel)
        return
    sig = sig_of(st)
    if kw is not None:
        try:
            kst = kw.stat()
            if stat.S_ISREG(kst.st_mode):
                sig += "|" + sig_of(kst)
        except OSError:
            pass
    walk.files[rel] = sig
