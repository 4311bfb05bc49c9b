"""An existing SQLite file that is not a kbindex index: refused by ``init`` and ``open`` before anything in
it changes (see kb_indexer.store.migrations)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def foreign_tables(path: Path) -> list[str] | None:
    """The tables of an existing SQLite file that is not a kbindex index (None: no file, an empty one, or
    a kbindex index). Read through a read-only connection: nothing about the file changes (no WAL switch)."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        probe = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None  # let the normal open report why
    try:
        names = [r[0] for r in probe.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    except sqlite3.DatabaseError:
        return None
    finally:
        probe.close()
    return None if not names or "_migrations" in names else names


def foreign_message(path: Path, tables: list[str]) -> str:
    shown = ", ".join(tables[:8]) + (f" and {len(tables) - 8} more" if len(tables) > 8 else "")
    return (f"{path} is a SQLite database of another application (tables: {shown}), not a kbindex index. "
            "Choose another file with --db (e.g. kbindex.db); `kbindex init --force` would add kbindex's "
            "tables to this file and switch it to WAL mode.")
