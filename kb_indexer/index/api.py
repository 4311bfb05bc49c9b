"""The indexing operations behind :class:`kb_indexer.api.KnowledgeBase`'s document and export/import
methods, built on first use: a cold ``kbindex search`` or ``query`` never imports the indexer
(:mod:`kb_indexer.index.sync` and what it reads files with)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb_indexer.config import DbTarget
from kb_indexer.errors import KbError
from kb_indexer.index.paths import foreign_keywords_files, to_relative
from kb_indexer.index.similarity_sync import adopt_unchanged_files, import_similarities
from kb_indexer.index.sync import Progress, add_document, remove_document, sync, update_document
from kb_indexer.store.errors import translating
from kb_indexer.store.export import export_all, import_all
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.results import (DocumentResult, ExportResult, ImportResult, ImportSimilaritiesResult, RemoveResult,
                                    SyncResult)


@translating  # a locked, read-only, full or damaged index raises busy, read_only, disk_full, bad_database
class IndexAPI:
    """Files into the index and the index out to JSON: add, update, remove, sync, import_similarities,
    export, import_."""

    def __init__(self, conn: Connection, kb_root: Path, db_path: DbTarget | None = None, confined: bool = False) -> None:
        self.conn = conn
        self.db_path = db_path
        self.kb_root = kb_root
        self.confined = confined   # a found index (KnowledgeBase.confined): no keywords file outside its folder

    def _refuse_foreign_keywords(self, only: str | None = None) -> None:
        """A found index whose `add --keywords` files (of ``only``, or of every document) lie outside its own
        folder: nothing is read, the user is told how to allow it (as for its knowledge-base root)."""
        if not self.confined or self.db_path is None:
            return
        foreign = foreign_keywords_files(self.conn, self.kb_root, self.db_path, only)
        if foreign:
            shown = ", ".join(f"{kf} (of {fp})" for fp, kf in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise KbError(f"The index {self.db_path} was found in this folder or a parent, and it names keywords "
                          f"files outside its own folder: {shown}. kbindex reads files there only when you say so: "
                          f"name the index with --db {self.db_path} (or KBINDEX_DB)", code="outside_kb")

    def add(self, path: str, keywords_file: str | None = None) -> DocumentResult:
        return cast("DocumentResult", add_document(self.conn, self.kb_root, path, keywords_file))

    def update(self, path: str) -> DocumentResult:
        self._refuse_foreign_keywords(to_relative(self.kb_root, path, must_exist=False))
        return cast("DocumentResult", update_document(self.conn, self.kb_root, path))

    def remove(self, path: str) -> RemoveResult:
        return cast("RemoveResult", remove_document(self.conn, self.kb_root, path))

    def sync(self, directory: str | None = None, progress: Progress | None = None) -> SyncResult:
        self._refuse_foreign_keywords()
        return cast("SyncResult", sync(self.conn, self.kb_root, directory, progress))

    def import_similarities(self, path: str) -> ImportSimilaritiesResult:
        return cast("ImportSimilaritiesResult", import_similarities(self.conn, Path(path).expanduser()))

    def export(self) -> ExportResult:
        return cast("ExportResult", export_all(self.conn))

    def import_(self, data: Any, force: bool = False) -> ImportResult:
        def adopt(conn: Connection) -> None:
            adopt_unchanged_files(conn, self.kb_root)
        return {"imported": import_all(self.conn, data, force=force, after_load=adopt)}
