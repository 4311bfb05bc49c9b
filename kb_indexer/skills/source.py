"""An indexed skill's SKILL.md as it is on disk now (``resources/read skill://NAME/SKILL.md``).

The index is data, not trust: a ``kbindex.db`` copied from elsewhere (or edited) may hold any ``folder`` and
``source_dir``. So the stored paths are checked before anything is opened: ``source_dir`` is absolute,
normalised, not a filesystem root and one of the skills directories the user gave (remembered in
``skill_dirs``, or in ``KBINDEX_SKILLS`` now); ``folder`` is a direct child of it. Then the file is opened
from ``/`` one component at a time without following any symlink (:func:`kb_indexer.beneath.open_folder`):
a skills directory (or a folder in its path) swapped for a symlink since the sync, a skill folder that is a
symlink and a SKILL.md that is a symlink are refused, even one swapped in between a check and the open.
The file must be a regular file of at most ``MAX_SKILL_BYTES`` (only that much plus one byte is read).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from kb_indexer.beneath import SUPPORTED, open_folder
from kb_indexer.errors import ValidationError
from kb_indexer.skills.dirs import env_dirs, is_filesystem_root
from kb_indexer.skills.sync import SkillFileRefused, read_opened, require_skill
from kb_indexer.store.dbapi import Connection

SKILL_FILE = "SKILL.md"
_FILE_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0))
_NO_LINKS = ("(a skill's file is read only through real folders of its skills directory, never through a "
             "symlink, which could lead outside the skills directory)")


class Refused(Exception):
    """A stored skill whose file is not read; ``str()`` says why."""


def path_problem(folder: str, source_dir: str, given: set[str]) -> str | None:
    """Why the stored ``folder`` / ``source_dir`` of a skill are not trusted (None: they are)."""
    for path in (source_dir, folder):
        if not isinstance(path, str) or not os.path.isabs(path) or os.path.normpath(path) != path:
            return f"its stored path {path!r} is not an absolute, normalised path"
    if is_filesystem_root(source_dir):
        return f"its stored skills directory {source_dir!r} is a filesystem root"
    if source_dir not in given:
        return (f"its stored skills directory {source_dir!r} is not one of the skills directories given "
                "(`kbindex skills sync DIR` or KBINDEX_SKILLS)")
    if os.path.dirname(folder) != source_dir:
        return f"its stored folder {folder!r} is not a folder of its skills directory {source_dir!r}"
    if os.path.realpath(source_dir) != source_dir:
        return (f"its skills directory {source_dir} now leads elsewhere (to {os.path.realpath(source_dir)}) "
                + _NO_LINKS)
    return None


def given_dirs(conn: Connection) -> set[str]:
    """The skills directories the user gave: remembered ones (as stored) and those of ``KBINDEX_SKILLS``."""
    return {r[0] for r in conn.execute("SELECT path FROM skill_dirs")} | set(env_dirs())


def _open_file(folder: str) -> int:
    if not SUPPORTED:   # no dir_fd / O_NOFOLLOW (Windows): the path-based check
        if os.path.realpath(folder) != folder:
            raise Refused(f"its folder {folder} is reached through a symlink " + _NO_LINKS)
        return os.open(os.path.join(folder, SKILL_FILE), _FILE_FLAGS)
    try:
        dir_fd = open_folder(Path(os.sep), folder, folder)
    except ValidationError:
        raise Refused(f"its folder {folder} is reached through a symlink " + _NO_LINKS) from None
    try:
        return os.open(SKILL_FILE, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(os.path.join(folder, SKILL_FILE)):
            raise Refused(f"{SKILL_FILE} is a symlink " + _NO_LINKS) from None
        raise
    finally:
        os.close(dir_fd)


def read_stored_skill(folder: str, source_dir: str, given: set[str]) -> bytes:
    """The bytes of ``folder``/SKILL.md, after the checks above; :class:`Refused`."""
    problem = path_problem(folder, source_dir, given)
    if problem:
        raise Refused(problem)
    try:
        fd = _open_file(folder)
    except OSError as exc:
        raise Refused(f"cannot read: {exc.strerror or exc}") from None
    try:
        return read_opened(fd)
    except SkillFileRefused as exc:
        raise Refused(str(exc)) from None


def skill_source(conn: Connection, name: str) -> str:
    """The text of an indexed skill's SKILL.md (read by :func:`read_stored_skill`); a file refused, gone or
    not UTF-8 is an ``invalid_input`` error, never another file's content."""
    r = require_skill(conn, name)
    shown = os.path.join(str(r["folder"]), SKILL_FILE)
    try:
        return read_stored_skill(r["folder"], r["source_dir"], given_dirs(conn)).decode("utf-8")
    except Refused as exc:
        raise ValidationError(f"skill {r['name']!r}: {shown} is not read: {exc}") from None
    except UnicodeDecodeError:
        raise ValidationError(f"skill {r['name']!r}: {shown} is not UTF-8 text") from None
