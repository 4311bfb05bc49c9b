"""Adding, updating, removing and syncing documents and similarity files."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any, Callable

from kb_indexer.errors import KbError, NotFoundError, ValidationError
from kb_indexer.index.files import load_json_file, validate_similarities_data
from kb_indexer.index.loader import LoadedDocument, load_document
from kb_indexer.index.paths import KEYWORDS_SUFFIX, to_relative
from kb_indexer.store.connection import savepoint, transaction
from kb_indexer.store.documents import KeywordIds, delete_document, get_document, upsert_document
from kb_indexer.store.similarities import upsert_similarity

SIMILARITY_FILENAME = "similarities.json"
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
    if not rel.lower().endswith((".md", ".markdown")):
        raise ValidationError(f"{rel} is not a markdown file (.md); pass the document, not its keywords file")
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
    kw_path = None
    if row["keywords_file"]:
        cand = kb_root / row["keywords_file"]
        kw_path = cand if cand.is_file() else None
    doc = load_document(kb_root, rel, kw_path)
    with transaction(conn):
        _store(conn, KeywordIds(conn), doc)
    return _summary(doc, "updated")


def remove_document(conn: sqlite3.Connection, kb_root: Path, path: str) -> dict:
    rel = to_relative(kb_root, path, must_exist=False)
    with transaction(conn):
        delete_document(conn, rel)
    return {"action": "removed", "filepath": rel}


def import_similarities(conn: sqlite3.Connection, path: Path, *, origin: str = "import",
                        replace_origin: bool = False) -> dict:
    data, _ = load_json_file(path)
    entries = validate_similarities_data(data, str(path))
    created = updated = removed = 0
    with transaction(conn):
        ids = KeywordIds(conn)
        keep = set()
        for e in entries:
            sid, new = upsert_similarity(conn, ids, e["keyword1"], e["keyword2"], e["type"], e["context"],
                                         e["score"], e["directional"], origin)
            keep.add(sid)
            created += new
            updated += not new
        if replace_origin:
            # Relations the file no longer lists go; the others were updated in place, so their ids
            # (kept in query history and learned items) stay valid.
            stale = [r[0] for r in conn.execute("SELECT id FROM keyword_similarities WHERE origin = ?", (origin,))
                     if r[0] not in keep]
            for sid in stale:
                conn.execute("DELETE FROM keyword_similarities WHERE id = ?", (sid,))
            removed = len(stale)
    out = {"file": str(path), "imported": len(entries), "created": created, "updated": updated}
    if replace_origin:
        out["removed"] = removed
    return out


def similarity_files(kb_root: Path) -> list[Path]:
    """``similarities.json`` at the project root (beside the KB) and inside the KB root."""
    out = []
    for cand in (kb_root.parent / SIMILARITY_FILENAME, kb_root / SIMILARITY_FILENAME):
        if cand.is_file() and cand.resolve() not in [p.resolve() for p in out]:
            out.append(cand)
    return out


def _walk_markdown(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if name.lower().endswith((".md", ".markdown")) and not name.startswith("."):
                found.append(Path(dirpath) / name)
    return found


def _orphan_keyword_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
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
        r["filepath"]: (r["content_hash"], r["stat_sig"])
        for r in conn.execute("SELECT filepath, content_hash, stat_sig FROM documents WHERE filepath LIKE ? ESCAPE '\\'",
                              (_like_prefix(prefix),))
    }
    seen: set[str] = set()
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
            if progress:
                progress(i, total)
        for rel in sorted(set(existing) - seen):
            conn.execute("DELETE FROM documents WHERE filepath = ?", (rel,))
            stats["removed"] += 1
        for orphan in _orphan_keyword_files(base):
            stats["errors"].append({"file": orphan.relative_to(root).as_posix(),
                                    "message": "keywords file without a markdown document beside it"})
        if directory is None:
            stats["similarities"] = _sync_similarities(conn, root, stats["errors"])
    return stats


def _sync_one(conn, ids, root: Path, rel: str, known: tuple[str, str] | None, stats: dict) -> None:
    from kb_indexer.index.paths import keywords_path_for, stat_sig

    md = root / rel
    if known is not None and known[1] == stat_sig(md, keywords_path_for(md)):
        stats["unchanged"] += 1
        return
    doc = load_document(root, rel)
    if known is not None and known[0] == doc.content_hash:
        conn.execute("UPDATE documents SET stat_sig = ? WHERE filepath = ?", (doc.stat_sig, rel))
        stats["unchanged"] += 1
        return
    with savepoint(conn):
        _store(conn, ids, doc)
    stats["added" if known is None else "updated"] += 1


def _sync_similarities(conn: sqlite3.Connection, root: Path, errors: list) -> dict:
    out = {"files": 0, "imported": 0, "unchanged_files": 0}
    for path in similarity_files(root):
        key = f"similarities_hash:{path.resolve()}"
        try:
            digest = hashlib.sha1(path.read_bytes()).hexdigest()
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if row and row[0] == digest:
                out["unchanged_files"] += 1
                continue
            with savepoint(conn):
                origin = "file:" + path.resolve().relative_to(root.parent.resolve()).as_posix()
                res = import_similarities(conn, path, origin=origin, replace_origin=True)
                conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                             "SET value = excluded.value", (key, digest))
            out["files"] += 1
            out["imported"] += res["imported"]
        except KbError as exc:
            errors.append({"file": str(path), "message": exc.message})
    return out


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
