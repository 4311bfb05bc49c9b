"""Adding, updating, removing and syncing documents and similarity files."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Callable

from kb_indexer.errors import KbError, NotFoundError, ValidationError
from kb_indexer.index.loader import LoadedDocument, load_document
from kb_indexer.index.membership import excluded_reason, is_document_name, is_skipped_dir, regular_file_problem
from kb_indexer.index.paths import KEYWORDS_SUFFIX, explicit_keywords_file, keywords_path_for, stat_sig, to_relative
from kb_indexer.index.similarity_sync import (SIMILARITY_FILENAME, import_similarities, similarity_files,
                                              sync_similarities)
from kb_indexer.index.stale import REJECTED_FILES_KEY, rejected_files
from kb_indexer.store.connection import savepoint, transaction
from kb_indexer.store.documents import KeywordIds, delete_document, get_document, upsert_document

__all__ = ["SIMILARITY_FILENAME", "add_document", "import_similarities", "remove_document", "similarity_files",
           "sync", "update_document"]

Progress = Callable[[int, int], None]


def _store(conn: sqlite3.Connection, ids: KeywordIds, doc: LoadedDocument) -> tuple[int, bool]:
    return upsert_document(
        conn, ids, filepath=doc.filepath, title=doc.title, summary=doc.summary, body=doc.body,
        keywords=doc.keywords, content_hash=doc.content_hash, stat_sig=doc.stat_sig,
        keywords_file=doc.keywords_file,
    )


def _summary(doc: LoadedDocument, action: str) -> dict[str, Any]:
    return {"action": action, "filepath": doc.filepath, "title": doc.title,
            "keywords": len(doc.keywords), "keywords_file": doc.keywords_file}


def add_document(conn: sqlite3.Connection, kb_root: Path, path: str, keywords_file: str | None = None) -> dict:
    rel = to_relative(kb_root, path)
    reason = excluded_reason(rel)
    if reason is not None:
        raise ValidationError(f"{rel} is not part of the knowledge base: {reason} (sync would drop it again)")
    problem = regular_file_problem(kb_root / rel)
    if problem is not None:
        raise ValidationError(f"{rel} is {problem}" if problem.startswith("a ") else f"{rel}: {problem}")
    kw_path = Path(keywords_file).expanduser() if keywords_file else None
    if kw_path is not None and not kw_path.is_file():
        raise ValidationError(f"Keywords file not found: {keywords_file}", code="not_found")
    doc = load_document(kb_root, rel, kw_path)
    with transaction(conn):
        _, created = _store(conn, KeywordIds(conn), doc)
    return _summary(doc, "added" if created else "updated")


def update_document(conn: sqlite3.Connection, kb_root: Path, path: str) -> dict:
    rel = to_relative(kb_root, path, must_exist=False)
    row = get_document(conn, rel)
    if row is None:
        raise NotFoundError(f"Document not in the index: {rel} (use `kbindex add`)")
    if not (kb_root / rel).is_file():
        raise ValidationError(f"File not found: {rel} (use `kbindex remove` to drop it from the index)",
                              code="not_found")
    doc = load_document(kb_root, rel, keywords_source(kb_root, rel, row["keywords_file"]))
    with transaction(conn):
        _store(conn, KeywordIds(conn), doc)
    return _summary(doc, "updated")


def remove_document(conn: sqlite3.Connection, kb_root: Path, path: str) -> dict:
    rel = to_relative(kb_root, path, must_exist=False)
    with transaction(conn):
        delete_document(conn, rel)
    return {"action": "removed", "filepath": rel}


def keywords_source(kb_root: Path, rel: str, stored: str | None) -> Path | None:
    """The keywords file given with ``add --keywords`` that ``rel`` keeps using (None: the default one).

    A missing one is an error rather than silently dropping the document's keywords.
    """
    explicit = explicit_keywords_file(kb_root, rel, stored)
    if explicit is not None and not explicit.is_file():
        raise ValidationError(f"Keywords file {stored} of {rel} (given with `kbindex add --keywords`) is missing; "
                              f"restore it, or run `kbindex add {rel}` to index the document without it")
    return explicit


def disk_sig(kb_root: Path, rel: str, stored_keywords_file: str | None) -> str:
    """The stat signature of ``rel`` and the keywords file it uses (explicit or default), as stored."""
    md = kb_root / rel
    return stat_sig(md, explicit_keywords_file(kb_root, rel, stored_keywords_file) or keywords_path_for(md))


def _walk_markdown(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not is_skipped_dir(d))
        for name in sorted(filenames):
            if is_document_name(name):
                found.append(Path(dirpath) / name)
    return found


def _orphan_keyword_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not is_skipped_dir(d))
        names = set(filenames)
        for name in sorted(filenames):
            if name.endswith(KEYWORDS_SUFFIX):
                stem = name[: -len(KEYWORDS_SUFFIX)]
                if f"{stem}.md" not in names and f"{stem}.markdown" not in names:
                    out.append(Path(dirpath) / name)
    return out


def sync(conn: sqlite3.Connection, kb_root: Path, directory: str | None = None,
         progress: Progress | None = None) -> dict:
    """Index the knowledge base incrementally in one transaction; a bad file is reported and skipped."""
    root = kb_root.resolve()
    if not root.is_dir():
        raise NotFoundError(f"Knowledge-base root does not exist: {root}")
    base = root if directory is None else (root / to_relative(root, directory)).resolve()
    if not base.is_dir():
        raise ValidationError(f"Not a directory: {directory}")
    prefix = "" if base == root else base.relative_to(root).as_posix() + "/"
    files = _walk_markdown(base)
    stats = {"added": 0, "updated": 0, "removed": 0, "unchanged": 0, "errors": []}
    existing = {
        r["filepath"]: (r["content_hash"], r["stat_sig"], r["keywords_file"])
        for r in conn.execute("SELECT filepath, content_hash, stat_sig, keywords_file FROM documents "
                              "WHERE filepath LIKE ? ESCAPE '\\'", (_like_prefix(prefix),))
    }
    seen: set[str] = set()
    rejected: dict[str, str] = {}
    total = len(files)
    with transaction(conn):
        ids = KeywordIds(conn)
        for i, path in enumerate(files, 1):
            rel = path.relative_to(root).as_posix() if path.resolve().is_relative_to(root) else None
            if rel is None:
                stats["errors"].append({"file": str(path), "message": "resolves outside the knowledge-base root"})
                continue
            seen.add(rel)
            try:
                _sync_one(conn, ids, root, rel, existing.get(rel), stats)
            except KbError as exc:
                stats["errors"].append({"file": rel, "message": exc.message})
                if not os.path.exists(path):
                    seen.discard(rel)  # deleted meanwhile, or a dangling symlink: not in the KB any more
                else:
                    try:  # the stale check leaves it alone until it changes again
                        rejected[rel] = disk_sig(root, rel, (existing.get(rel) or (None, None, None))[2])
                    except KbError:
                        pass
            if progress:
                progress(i, total)
        for rel in sorted(set(existing) - seen):
            conn.execute("DELETE FROM documents WHERE filepath = ?", (rel,))
            stats["removed"] += 1
        _record_rejected(conn, prefix, rejected)
        used = {r[0] for r in conn.execute("SELECT keywords_file FROM documents WHERE keywords_file IS NOT NULL")}
        for orphan in _orphan_keyword_files(base):
            if orphan.relative_to(root).as_posix() in used:
                continue  # given to a document with `add --keywords`
            stats["errors"].append({"file": orphan.relative_to(root).as_posix(),
                                    "message": "keywords file without a markdown document beside it"})
        if base == root:  # `sync` and `sync <the KB root>` alike
            stats["similarities"] = sync_similarities(conn, root, stats["errors"])
    return stats


def _sync_one(conn, ids, root: Path, rel: str, known: tuple[str, str, str | None] | None, stats: dict) -> None:
    explicit = keywords_source(root, rel, known[2] if known else None)
    md = root / rel
    if known is not None and known[1] == stat_sig(md, explicit or keywords_path_for(md)):
        stats["unchanged"] += 1
        return
    doc = load_document(root, rel, explicit)
    if known is not None and known[0] == doc.content_hash:
        conn.execute("UPDATE documents SET stat_sig = ? WHERE filepath = ?", (doc.stat_sig, rel))
        stats["unchanged"] += 1
        return
    with savepoint(conn):
        _store(conn, ids, doc)
    stats["added" if known is None else "updated"] += 1


def _record_rejected(conn: sqlite3.Connection, prefix: str, rejected: dict[str, str]) -> None:
    kept = {k: v for k, v in rejected_files(conn).items() if not k.startswith(prefix)}
    kept.update(rejected)
    if kept:
        conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                     "SET value = excluded.value", (REJECTED_FILES_KEY, json.dumps(kept, sort_keys=True)))
    else:
        conn.execute("DELETE FROM meta WHERE key = ?", (REJECTED_FILES_KEY,))


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
