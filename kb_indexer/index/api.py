"""The indexing operations behind :class:`kb_indexer.api.KnowledgeBase`'s document, stale-check and
export/import methods, built on first use: a cold ``kbindex search`` never imports the indexer
(:mod:`kb_indexer.index.sync` and what it reads files with)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from kb_indexer.index.similarity_sync import adopt_unchanged_files, import_similarities
from kb_indexer.index.stale import check
from kb_indexer.index.sync import Progress, add_document, remove_document, sync, update_document
from kb_indexer.store.errors import translating
from kb_indexer.store.export import export_all, import_all


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class IndexAPI:
    """Files into the index and the index out to JSON: add, update, remove, sync, import_similarities,
    stale, export, import_."""

    def __init__(self, conn: sqlite3.Connection, kb_root: Path, db_path: Path | None = None) -> None:
        self.conn = conn
        self.db_path = db_path
        self.kb_root = kb_root

    def add(self, path: str, keywords_file: str | None = None) -> dict[str, Any]:
        return add_document(self.conn, self.kb_root, path, keywords_file)

    def update(self, path: str) -> dict[str, Any]:
        return update_document(self.conn, self.kb_root, path)

    def remove(self, path: str) -> dict[str, Any]:
        return remove_document(self.conn, self.kb_root, path)

    def sync(self, directory: str | None = None, progress: Progress | None = None) -> dict[str, Any]:
        return sync(self.conn, self.kb_root, directory, progress)

    def import_similarities(self, path: str) -> dict[str, Any]:
        return import_similarities(self.conn, Path(path).expanduser())

    def stale(self, full: bool = False) -> dict[str, Any]:
        return check(self.conn, self.kb_root, full=full)

    def export(self) -> dict[str, Any]:
        return export_all(self.conn)

    def import_(self, data: Any, force: bool = False) -> dict[str, Any]:
        return {"imported": import_all(self.conn, data, force=force,
                                       after_load=lambda conn: adopt_unchanged_files(conn, self.kb_root))}
