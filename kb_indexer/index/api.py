"""The indexing operations behind :class:`kb_indexer.api.KnowledgeBase`'s document and export/import
methods, built on first use: a cold ``kbindex search`` or ``query`` never imports the indexer
(:mod:`kb_indexer.index.sync` and what it reads files with)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from kb_indexer.config import DbTarget
from kb_indexer.index.similarity_sync import adopt_unchanged_files, import_similarities
from kb_indexer.index.sync import Progress, add_document, remove_document, sync, update_document
from kb_indexer.store.errors import translating
from kb_indexer.store.export import export_all, export_counts, import_all, write_export
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.results import (DocumentResult, ExportResult, ImportResult, ImportSimilaritiesResult, RemoveResult,
                                    SyncResult)


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class IndexAPI:
    """Files into the index and the index out to JSON: add, update, remove, sync, import_similarities,
    export, import_."""

    def __init__(self, conn: Connection, kb_root: Path, db_path: DbTarget | None = None) -> None:
        self.conn = conn
        self.db_path = db_path
        self.kb_root = kb_root

    def add(self, path: str, keywords_file: str | None = None) -> DocumentResult:
        return cast("DocumentResult", add_document(self.conn, self.kb_root, path, keywords_file))

    def update(self, path: str) -> DocumentResult:
        return cast("DocumentResult", update_document(self.conn, self.kb_root, path))

    def remove(self, path: str) -> RemoveResult:
        return cast("RemoveResult", remove_document(self.conn, self.kb_root, path))

    def sync(self, directory: str | None = None, progress: Progress | None = None, force: bool = False) -> SyncResult:
        return cast("SyncResult", sync(self.conn, self.kb_root, directory, progress, force))

    def import_similarities(self, path: str) -> ImportSimilaritiesResult:
        return cast("ImportSimilaritiesResult", import_similarities(self.conn, Path(path).expanduser()))

    def export(self) -> ExportResult:
        return cast("ExportResult", export_all(self.conn))

    def export_to(self, out: Callable[[str], Any]) -> dict[str, int]:
        return write_export(self.conn, out)

    def export_counts(self) -> dict[str, int]:
        return export_counts(self.conn)

    def import_(self, data: Any, force: bool = False) -> ImportResult:
        def adopt(conn: Connection) -> None:
            adopt_unchanged_files(conn, self.kb_root)
        return {"imported": import_all(self.conn, data, force=force, after_load=adopt)}
