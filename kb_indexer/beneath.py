"""Opening a file or folder of the knowledge base beneath its root, free of check-then-use races.

A path such as ``root/a/b/doc.md`` is not handed to the kernel whole: the root is opened, then every
component relative to the folder before it (``dir_fd``) with ``O_NOFOLLOW``. A component that is a symlink
is therefore seen as one, by the very call that would have followed it, and swapping a folder for a symlink
between a check and the use (``renameat2(RENAME_EXCHANGE)`` in a loop) cannot lead the open elsewhere:

* ``follow=True`` (reading a document or its keywords file): a symlink is resolved by hand, its target read
  with ``readlink`` and walked the same way; a target that climbs above the root (``..``) or is an absolute
  path outside it is refused (``outside_kb``). A symlink that stays inside the root is read, as before.
* ``follow=False`` (the folder a file is written to): a symlinked folder is refused.

A sync's reader opens a folder once for the files it reads together (:func:`cached_folders`), each then
opened relative to it: about one open per file, as a plain ``open`` of the whole path costs.

:func:`resolves_outside` is the one path-based rule for "outside the root" (the walk uses it to report a
document or keywords file leading outside; this module uses it where ``dir_fd`` is not supported).
"""

from __future__ import annotations

import errno
import os
import stat
from _thread import get_ident
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kb_indexer.errors import ValidationError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# Where ``dir_fd`` and ``O_NOFOLLOW`` are missing (Windows), the path-based checks are used instead.
SUPPORTED = bool(_NOFOLLOW and getattr(os, "O_DIRECTORY", 0)) and {
    os.open, os.readlink, os.rename, os.unlink, os.stat} <= os.supports_dir_fd
MAX_LINKS = 40  # symlinks resolved in one path, as the kernel allows (components opened again count too)
_CHANGED = "\0changed"  # not a path: a component swapped while it was being opened
# What opening a symlink with O_NOFOLLOW raises (Linux: ELOOP; with O_DIRECTORY maybe ENOTDIR; BSD: EMLINK).
_LINK_ERRNOS = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK}
_CACHES: dict[int, dict[tuple[str, ...], int]] = {}  # thread -> (root, *folder components) -> folder fd
_CACHE_MAX = 64


def resolves_outside(root_real: str, path: str | os.PathLike[str]) -> bool:
    """Whether ``path``, its symlinks resolved, leads outside ``root_real`` (an already resolved root)."""
    try:
        return os.path.commonpath([root_real, os.path.realpath(path)]) != root_real
    except ValueError:  # mixed absolute and relative, or another drive
        return True


def outside(shown: str, why: str) -> ValidationError:
    return ValidationError(f"{shown} {why}", code="outside_kb")


def relative_parts(root: Path, path: str | os.PathLike[str], shown: str) -> list[str]:
    """``path``'s components below ``root`` (both made absolute, without resolving symlinks)."""
    base, full = os.fspath(root), os.fspath(path)
    if full.startswith(base.rstrip(os.sep) + os.sep) and os.path.isabs(base):  # the usual case: root / rel
        parts = full[len(base.rstrip(os.sep)) + 1:].split(os.sep)
        if os.pardir not in parts:
            return [p for p in parts if p not in ("", ".")]
    rel = os.path.relpath(os.path.abspath(full), os.path.abspath(base))
    parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
    if parts[:1] == [os.pardir] or os.path.isabs(rel):
        raise outside(shown, "is outside the knowledge-base root")
    return parts


def open_beneath(root: Path, path: str | os.PathLike[str], flags: int, shown: str) -> int:
    """A file descriptor of ``path`` (inside ``root``), opened with ``flags``, symlinks followed only while
    they stay beneath the root. Inside :func:`cached_folders` the folder is opened once for its files."""
    if not SUPPORTED:
        if resolves_outside(os.path.realpath(root), path):
            raise outside(shown, "resolves outside the knowledge-base root")
        return os.open(path, flags | _CLOEXEC)
    parts = relative_parts(root, path, shown)
    cache = _CACHES.get(get_ident())
    if cache is None or not parts:
        return _walk(root, parts, flags, shown, follow=True)
    key = (os.fspath(root), *parts[:-1])
    folder = cache.get(key)
    if folder is None:
        folder = _walk(root, parts[:-1], _DIR, shown, follow=True)
        if len(cache) >= _CACHE_MAX:
            _close(list(cache.values()))
            cache.clear()
        cache[key] = folder
    try:
        return os.open(parts[-1], flags | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
    except OSError as exc:
        if exc.errno not in _LINK_ERRNOS:
            raise
    return _walk(root, parts, flags, shown, follow=True)  # the file is a symlink: resolved the long way


@contextmanager
def cached_folders() -> Iterator[None]:
    """While this block runs (in this thread), :func:`open_beneath` keeps the folders it opened (each
    reached from the root as always) and opens the next file of one relative to it: one open per file
    instead of one per path component, for a sync reading a folder's documents one after another. A
    folder renamed meanwhile is still the one opened, inside the root when it was opened."""
    ident = get_ident()
    _CACHES[ident] = {}
    try:
        yield
    finally:
        _close(list(_CACHES.pop(ident).values()))


def open_folder(root: Path, folder: str | os.PathLike[str], shown: str) -> int:
    """A file descriptor of the folder ``folder`` of ``root``, reached through no symlink (refused)."""
    return _walk(root, relative_parts(root, folder, shown), _DIR, shown, follow=False)


def _walk(root: Path, parts: list[str], flags: int, shown: str, *, follow: bool) -> int:
    """Open ``parts`` below ``root`` one at a time. ``chain``: the folders entered, each relative to the one
    before; the root itself (as named, symlinks in its own path followed: the user's choice) is not opened
    unless the path ends on it: the first component is opened as ``root/name``, still ``O_NOFOLLOW``."""
    todo = parts[::-1]  # a stack: the next component last
    chain: list[int] = []
    links = 0
    try:
        while todo:
            name = todo.pop()
            if name == os.pardir:
                if not chain:
                    raise outside(shown, "resolves outside the knowledge-base root (a symlink leads above it)")
                os.close(chain.pop())
                continue
            where = {"dir_fd": chain[-1]} if chain else {}
            at = name if chain else os.path.join(root, name)
            try:
                fd = os.open(at, (_DIR if todo else flags | _NOFOLLOW | _CLOEXEC), **where)
            except OSError as exc:
                target = _link_target(exc, at, where)
                if target is None:
                    raise
                if target is _CHANGED:  # swapped between the open and readlink: open it again
                    links += 1
                    if links > MAX_LINKS:
                        raise
                    todo.append(name)
                    continue
                if not follow:
                    raise outside(shown, f"is in a folder reached through the symlink {name!r}, which could lead "
                                         "outside the knowledge-base root; kbindex writes only in real folders "
                                         "of it") from None
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
                if os.path.isabs(target):
                    _close(chain)
                    chain.clear()
                    target = _below_root(root, target, shown)
                todo.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
                continue
            if not todo:
                return fd
            chain.append(fd)
        # the path ends on a folder (the root itself, or "a/.."): open it as a folder
        return os.dup(chain[-1]) if chain else os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    finally:
        _close(chain)


def _link_target(exc: OSError, at: str, where: dict[str, int]) -> str | None:
    """The target of the symlink ``at`` that made ``exc``; None when ``at`` is no symlink; ``_CHANGED`` when
    it changed between the open and ``readlink`` (a folder or a symlink again by now: open it again)."""
    if exc.errno not in _LINK_ERRNOS:
        return None
    try:
        return os.readlink(at, **where)
    except OSError:
        pass
    try:
        mode = os.stat(at, **where, follow_symlinks=False).st_mode
    except OSError:
        return None
    return _CHANGED if stat.S_ISDIR(mode) or stat.S_ISLNK(mode) else None


def _below_root(root: Path, target: str, shown: str) -> str:
    """An absolute symlink target as a path relative to the root (named as given, or resolved)."""
    for base in {os.path.abspath(root), os.path.realpath(root)}:
        if target == base or target.startswith(base.rstrip("/") + "/"):
            return target[len(base):]
    raise outside(shown, "resolves outside the knowledge-base root (a symlink)")


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
