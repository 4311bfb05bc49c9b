"""Where the index and the knowledge base live.

The index is found like git finds ``.git``: ``--db`` wins, then ``KBINDEX_DB``,
then the first ``kbindex.db`` in the current directory or one of its parents,
else ``./kbindex.db`` (what ``kbindex init`` creates by default).
The knowledge-base root is stored in the index at ``init``; ``--kb`` /
``KBINDEX_KB`` override it, and its default is ``knowledge-base/`` beside the index.
"""

from __future__ import annotations

import os
from pathlib import Path

DB_FILENAME = "kbindex.db"
DEFAULT_KB_DIRNAME = "knowledge-base"


def find_db(db: str | os.PathLike[str] | None = None, *, start: Path | None = None) -> Path:
    """Resolve the index path (it may not exist yet)."""
    if db:
        return Path(db).expanduser().absolute()
    env = os.environ.get("KBINDEX_DB")
    if env:
        return Path(env).expanduser().absolute()
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / DB_FILENAME
        if candidate.is_file():
            return candidate
    return here / DB_FILENAME


def default_kb_root(db_path: Path) -> Path:
    return db_path.parent / DEFAULT_KB_DIRNAME


def stored_root_form(db_path: Path, kb_root: Path) -> Path:
    """How the index remembers its knowledge-base root: relative to the index file's folder when the root is
    inside that folder or beside it (so a copied or moved project keeps working), else absolute."""
    base = db_path.absolute().parent
    try:
        rel = Path(os.path.relpath(kb_root.absolute(), base))
    except ValueError:  # another drive (Windows)
        return kb_root.absolute()
    return kb_root.absolute() if rel.parts[:2] == ("..", "..") else rel


def stored_root_path(db_path: Path, stored: str) -> Path:
    """The knowledge-base root from its stored form (a relative one is relative to the index's folder)."""
    path = Path(stored)
    return path if path.is_absolute() else Path(os.path.normpath(db_path.absolute().parent / path))
