"""The knowledge-base root ``kbindex init`` keeps for an index that exists already."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kb_indexer.config import DbTarget
from kb_indexer.errors import KbError
from kb_indexer.store.dbapi import Connection
from kb_indexer.store import open_db


def repointed(db_path: DbTarget, new_root: Path, stored_of: Callable[[Connection], Path], *, named: bool,
              force: bool) -> Path:
    """The root of an existing index after ``init``: the stored one, unless a root is ``named`` (``--kb``,
    ``KBINDEX_KB``). A named root other than the stored one of an index holding documents is refused without
    ``force`` (``would_repoint``): the stored root is every user's (a team's shared index, a cron sync), and a
    sync of the new one would remove what it does not hold."""
    try:
        probe = open_db(db_path)
    except Exception:   # not a kbindex index (yet): init_db decides, and says why
        return new_root
    try:
        stored = stored_of(probe)
        holds_documents = probe.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None
    finally:
        probe.close()
    if not named:
        return stored
    if holds_documents and not force and stored.resolve() != new_root.resolve():
        raise KbError(f"The index {db_path} holds the documents of {stored}: `init` with the root {new_root} (from "
                      f"--kb or KBINDEX_KB) would point it there for everyone who uses it, and the next sync there "
                      f"would remove what that folder does not hold. Nothing was changed. For one command, pass "
                      f"--kb {new_root} to that command; to move the index there: kbindex init --kb {new_root} "
                      "--force", code="would_repoint")
    return new_root
