"""Which source a chat talks to: a knowledge base (an index) or none (free mode), and where its state lives.

* ``--db PATH`` (or ``KBINDEX_DB``, or ``kbindex.db`` found in the current folder or a parent): knowledge-
  base mode. The prompt is ``kbindex[<name>]> `` where the name is the KB root's folder name, or the index
  file's stem when the root does not exist.
* ``--free``, or no index found: free mode, prompt ``kbindex> ``. Conversation and skills work, knowledge-
  base tools and retrieval do not. Its sessions and skills live in a per-user index, the chat store:
  ``KBINDEX_CHAT_DB``, else ``$XDG_DATA_HOME/kbindex/chat.db`` (``~/.local/share/kbindex/chat.db``: :func:`data_dir`).

The chat store and the input history hold a person's conversations: they are private files
(:func:`private_file`), readable and writable by their owner only. (A knowledge base's own index is not:
it is created with the user's umask, like any project file, so that a team can share it.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_indexer import settings
from kb_indexer.api import KnowledgeBase
from kb_indexer.config import DbArg, DbTarget, DbUrl, find_db, named_db
from kb_indexer.errors import UsageError

FREE_NOTE = ("no knowledge base selected (no kbindex.db here or above): free mode, conversation and skills "
             "only; select one with `kbindex chat --db PATH` (or `kbindex init && kbindex sync` here)")


@dataclass
class Source:
    mode: str                  # "kb" | "free"
    name: str | None
    db: DbTarget
    kb_root: Path | None

    @property
    def prompt(self) -> str:
        return f"kbindex[{self.name}]> " if self.mode == "kb" else "kbindex> "

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "name": self.name, "db": str(self.db),
                "kb_root": str(self.kb_root) if self.kb_root else None}


PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
_GROUP_OTHER = 0o077


def private_file(path: Path) -> None:
    """Make ``path`` a private file: created 0600 (its folder 0700 when kbindex creates that), and an
    existing one (with the ``-wal`` and ``-shm`` files SQLite keeps beside it) loses any group and other
    permission (SQLite creates those two with the database file's mode). Raises OSError when the file
    cannot be created; a mode that cannot be changed (another owner's file) is left as it is."""
    if not path.parent.is_dir():
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        pass
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = part.stat().st_mode
            if mode & _GROUP_OTHER:
                part.chmod(mode & 0o7777 & ~_GROUP_OTHER)
        except OSError:      # absent, or not ours to change
            pass


def data_dir() -> Path:
    """The chat's per-user folder, ``$XDG_DATA_HOME/kbindex`` (``~/.local/share/kbindex``): the chat store, the
    input history and the sessions ``/export`` writes (``exports/``), unless told otherwise."""
    base = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(base).expanduser().absolute() / "kbindex"


def chat_store_path() -> Path:
    env = settings.text("KBINDEX_CHAT_DB")
    if env:
        return Path(env).expanduser().absolute()
    return data_dir() / "chat.db"


def open_source(db: DbArg, free: bool) -> tuple[KnowledgeBase, Source, str | None]:
    """(KnowledgeBase, Source, note for the user or None)."""
    if free and db:
        raise UsageError("--db and --free exclude each other: free mode has no knowledge base")
    if not free:
        path = find_db(db)
        if isinstance(path, DbUrl) or path.is_file():
            kb = KnowledgeBase.open(db)   # db None: found again, its root checked (roots.py)
            root = kb.kb_root
            name = root.name if root.is_dir() or isinstance(path, DbUrl) else path.stem
            return kb, Source("kb", name, path, root), None
        if named_db(db):
            raise UsageError(f"no index at {path}: create it with `kbindex init --db {path}` (or chat --free)")
    store = chat_store_path()
    private_file(store)
    kb, _ = KnowledgeBase.init(store, store.parent)
    return kb, Source("free", None, store, None), None if free else FREE_NOTE
