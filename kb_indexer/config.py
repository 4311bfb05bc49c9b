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


def find_db(db: str | os.PathLike | None = None, *, start: Path | None = None) -> Path:
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
