"""The skills directories of one `skills sync`: remembered, given, ``KBINDEX_SKILLS``, forgotten.

Every path is stored and compared resolved (``Path.resolve()``: ``a/../a`` and a symlink to ``a`` are
``a``); rows stored before that (relative, or not normalised) are resolved and deduplicated when read, and
rewritten by the next sync. A remembered directory that has become a symlink since (or sits below one) is
not followed: it is reported (:attr:`SyncDirs.moved`), not synced, and stays remembered as it was.
The order decides which copy of a duplicate name is new-indexed: the remembered directories (in the
order they were first given), then the ones given now (command-line order), then ``KBINDEX_SKILLS``
(read on every sync, never remembered).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kb_indexer import settings
from kb_indexer.errors import NotFoundError, UsageError
from kb_indexer.store.dbapi import Connection

ENV_VAR = "KBINDEX_SKILLS"


@dataclass
class SyncDirs:
    ordered: list[str]                 # to sync, in priority order
    new: list[str]                     # given now and not yet remembered
    forget: list[str] = field(default_factory=list)

    @property
    def moved(self) -> list[str]:
        """Remembered directories that lead elsewhere now (a symlink swapped in since they were given)."""
        return [d for d in self.ordered if os.path.realpath(d) != d]

    @property
    def scanned(self) -> list[str]:
        moved = self.moved
        return [d for d in self.ordered if d not in moved and Path(d).is_dir()]


def resolved(path: str | os.PathLike[str]) -> str:
    return str(Path(path).expanduser().resolve())


def stored(path: str) -> str:
    """A remembered path as used: as stored when absolute and normalised (a sync stored it resolved; a
    symlink it has become since is not followed), else (a row of an older version) resolved."""
    if os.path.isabs(path) and os.path.normpath(path) == path:
        return path
    return resolved(path)


def is_filesystem_root(path: str) -> bool:
    """Whether ``path`` is ``/`` (or a drive's root): never a skills directory, neither synced nor read."""
    return os.path.dirname(path) == path


def env_dirs() -> list[str]:
    raw = settings.raw(ENV_VAR)
    return list(dict.fromkeys(resolved(p) for p in raw.split(os.pathsep) if p.strip()))


def remembered(conn: Connection) -> list[str]:
    """The remembered directories, resolved and without duplicates, oldest first."""
    rows = conn.execute("SELECT path FROM skill_dirs ORDER BY added_at, rowid")
    return list(dict.fromkeys(stored(r[0]) for r in rows))


def resolve_dirs(conn: Connection, given: list[str], forget: list[str] | None = None) -> SyncDirs:
    """The directories of this sync. A given directory must exist; a forgotten one must be remembered
    (or hold indexed skills) and is not synced now."""
    given_res: list[str] = []
    for d in given:
        if not Path(d).expanduser().is_dir():
            raise NotFoundError(f"Skills directory not found: {d}")
        r = resolved(d)
        if is_filesystem_root(r):
            raise UsageError(f"{d} is a filesystem root: give the folder that holds the skill folders")
        given_res.append(r)
    known = remembered(conn)
    sources = {stored(r[0]) for r in conn.execute("SELECT DISTINCT source_dir FROM skills")}
    gone: list[str] = []
    for d in forget or []:
        named = os.path.abspath(os.path.expanduser(d))   # a remembered dir that is a symlink now, as named
        r = named if named in known or named in sources else resolved(d)
        if r not in known and r not in sources:
            raise NotFoundError(f"Not a remembered skills directory: {d} (see `kbindex skills list`)")
        if r in given_res:
            raise UsageError(f"{d} is both given and forgotten")
        gone.append(r)
    ordered = [d for d in dict.fromkeys([*known, *given_res, *env_dirs()]) if d not in gone]
    if not ordered and not gone:
        raise UsageError("No skills directory: give one (`kbindex skills sync DIR`) or set KBINDEX_SKILLS")
    return SyncDirs(ordered, [d for d in dict.fromkeys(given_res) if d not in known], list(dict.fromkeys(gone)))


def store_dirs(conn: Connection, dirs: SyncDirs) -> None:
    """In the sync's transaction: remember the new directories, forget the forgotten ones and rewrite
    rows stored unresolved (older versions) as resolved paths."""
    for (path, added_at) in conn.execute("SELECT path, added_at FROM skill_dirs").fetchall():
        r = stored(path)
        if r != path or r in dirs.forget:
            conn.execute("DELETE FROM skill_dirs WHERE path = ?", (path,))
            if r not in dirs.forget:
                conn.execute("INSERT OR IGNORE INTO skill_dirs (path, added_at) VALUES (?, ?)", (r, added_at))
    for d in dirs.new:
        conn.execute("INSERT OR IGNORE INTO skill_dirs (path) VALUES (?)", (d,))
    conn.executemany("UPDATE skill_dirs SET synced_at = strftime('%Y-%m-%dT%H:%M:%S', 'now') WHERE path = ?",
                     [(d,) for d in dirs.scanned])
