"""Adding, updating, removing and syncing documents and similarity files."""

from __future__ import annotations

import functools
import itertools
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from kb_indexer.errors import KbError, NotFoundError, ValidationError
from kb_indexer.index.loader import LoadedDocument, load_document, markdown_text, text_hash
from kb_indexer.index import orphans
from kb_indexer.index.membership import excluded_reason, regular_file_problem
from kb_indexer.index.paths import default_keywords_rel, explicit_keywords_file, keywords_path_for, stat_sig, to_relative
from kb_indexer.index.reader import PARALLEL_MIN_DOCS, helper_process, keywords_source, read_all, worker_count
from kb_indexer.index.renames import Renames
from kb_indexer.index.similarity_sync import (SIMILARITY_FILENAME, import_similarities, similarity_files,
                                              sync_similarities)
from kb_indexer.index.stale import REJECTED_FILES_KEY, record_folders, rejected_files, settle_folders
from kb_indexer.index.walk import scan
from kb_indexer.store import meta
from kb_indexer.store.connection import bulk_writing, checkpoint, exclusive, plain_rows, round_trips, transaction
from kb_indexer.store.sparse import fold_is_large, refresh as refresh_sparse
from kb_indexer.store.documents import (KeywordIds, delete_document, get_document, hanging_off, upsert_document,
                                       write_fts_rows)
from kb_indexer.store.dbapi import Connection

__all__ = ["SIMILARITY_FILENAME", "add_document", "import_similarities", "remove_document", "similarity_files",
           "sync", "update_document"]

Progress = Callable[[int, int], None]
Report = dict[str, Any]   # a command's JSON result
Known = tuple[Any, ...]   # a stored document: (content hash, stat signature, keywords file, text hash)
FtsRow = tuple[int, str, str, str, str]   # see kb_indexer.store.documents.write_fts_rows
T = TypeVar("T")


def _store(conn: Connection, ids: KeywordIds, doc: LoadedDocument,
           fts_rows: list[FtsRow] | None = None, stored: bool = False) -> tuple[int, bool]:
    return upsert_document(
        conn, ids, filepath=doc.filepath, title=doc.title, summary=doc.summary, body=doc.body,
        keywords=doc.keywords, content_hash=doc.content_hash, stat_sig=doc.stat_sig,
        keywords_file=doc.keywords_file, fts_rows=fts_rows, text_hash=doc.text_hash, stored=stored,
    )


def _summary(doc: LoadedDocument, action: str) -> dict[str, Any]:
    return {"action": action, "filepath": doc.filepath, "title": doc.title,
            "keywords": len(doc.keywords), "keywords_file": doc.keywords_file, "warnings": doc.warnings,
            "errors": doc.errors}


def add_document(conn: Connection, kb_root: Path, path: str, keywords_file: str | None = None) -> Report:
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
        same = _same(conn, doc)
        _, created = _store(conn, KeywordIds(conn), doc)
    return _summary(doc, "added" if created else "unchanged" if same else "updated")


def _same(conn: Connection, doc: LoadedDocument) -> bool:
    """Whether the index holds ``doc`` as read (text and keywords file alike): storing it changes nothing."""
    row = conn.execute("SELECT content_hash, keywords_file FROM documents WHERE filepath = ?",
                       (doc.filepath,)).fetchone()
    return row is not None and row[0] == doc.content_hash and row[1] == doc.keywords_file


def update_document(conn: Connection, kb_root: Path, path: str) -> Report:
    rel = to_relative(kb_root, path, must_exist=False)
    row = get_document(conn, rel)
    if row is None:
        if Path(path).expanduser().exists():
            to_relative(kb_root, path)   # a file outside the root is refused as `add` would refuse it (outside_kb)
        raise NotFoundError(f"Document not in the index: {rel} (use `kbindex add`)")
    problem = regular_file_problem(kb_root / rel)
    if problem is not None and problem.startswith("not found"):
        raise ValidationError(f"File not found: {rel} (use `kbindex remove` to drop it from the index)",
                              code="not_found")
    if problem is not None:
        raise ValidationError(f"{rel} is {problem}" if problem.startswith("a ") else f"{rel}: {problem}")
    doc = load_document(kb_root, rel, keywords_source(kb_root, rel, row["keywords_file"]))
    with transaction(conn):
        same = _same(conn, doc)
        _store(conn, KeywordIds(conn), doc)
    return _summary(doc, "unchanged" if same else "updated")


def remove_document(conn: Connection, kb_root: Path, path: str) -> Report:
    rel = to_relative(kb_root, path, must_exist=False)
    with transaction(conn):
        delete_document(conn, rel)
    return {"action": "removed", "filepath": rel}


def disk_sig(kb_root: Path, rel: str, stored_keywords_file: str | None) -> str:
    """The stat signature of ``rel`` and the keywords file it uses (explicit or default), as stored."""
    md = kb_root / rel
    return stat_sig(md, explicit_keywords_file(kb_root, rel, stored_keywords_file) or keywords_path_for(md))


# A long sync commits in batches so no other kbindex process waits long for the write lock, the WAL stays
# small and a killed sync keeps what it committed (a re-run goes on from there: unchanged files are skipped).
BATCH_DOCS = 500
BATCH_SECONDS = 0.5
# A pause after each batch: SQLite's busy handler polls, so a writer waiting for the lock needs a moment
# in which it is free, or a sync that begins its next batch at once could keep it waiting for several.
BATCH_PAUSE = 0.02


_END = object()


def _batches(items: Iterable[T], conn: Connection) -> Iterator[Iterator[T]]:
    """Split ``items`` into batches; the caller runs each in its own transaction and consumes it whole.
    A batch ends after BATCH_DOCS items or BATCH_SECONDS; a passive WAL checkpoint follows each commit."""
    source = iter(items)
    head = [next(source, _END)]
    while head[0] is not _END:
        yield _batch(source, head)
        checkpoint(conn)
        if head[0] is not _END:
            time.sleep(BATCH_PAUSE)


def _batch(source: Iterator[T], head: list[Any]) -> Iterator[T]:
    deadline = time.monotonic() + BATCH_SECONDS
    for n in range(1, BATCH_DOCS + 1):
        item, head[0] = head[0], next(source, _END)
        yield item
        if head[0] is _END or time.monotonic() > deadline:
            return


def _scope(conn: Connection, root: Path, directory: str | None) -> tuple[Path, str]:
    if not root.is_dir():
        raise NotFoundError(f"Knowledge-base root does not exist: {root} (create it, or point the index at your "
                            "notes with `kbindex init --kb DIR`, or give --kb DIR)")
    if directory is None:
        return root, ""
    try:
        base = (root / to_relative(root, directory)).resolve()
    except ValidationError as exc:
        if exc.code != "not_found":
            raise
        raise ValidationError(f"Folder not found: {directory} (looked for in the working folder and in the "
                              f"knowledge-base root {root})", code="not_found") from None
    if not base.is_dir():
        raise ValidationError(f"Not a directory: {directory}")
    return base, ("" if base == root else base.relative_to(root).as_posix() + "/")


def sync(conn: Connection, kb_root: Path, directory: str | None = None,
         progress: Progress | None = None, force: bool = False) -> Report:
    """Index the knowledge base incrementally; a bad file is reported in ``errors`` and skipped.

    New and changed documents are written in batches (each its own transaction), then deletions and the
    bookkeeping, then the similarities files. The folder filter is case-exact. Two syncs of one index never
    interleave (:func:`exclusive`: on PostgreSQL, from any host).
    """
    with exclusive(conn, "sync"), bulk_writing(conn):
        return _sync(conn, kb_root, directory, progress, force)


def _sync(conn: Connection, kb_root: Path, directory: str | None, progress: Progress | None, force: bool) -> Report:
    root = kb_root.resolve()
    base, prefix = _scope(conn, root, directory)
    started_ns = time.time_ns()
    walk = scan(root, prefix)
    stats: dict[str, Any] = {"added": 0, "updated": 0, "removed": 0, "renamed": 0, "unchanged": 0,
                             "errors": list(walk.problems), "warnings": [], "batches": 0}
    existing = {r[0]: r[1:] for r in plain_rows(
        conn, "SELECT filepath, content_hash, stat_sig, keywords_file, text_hash FROM documents")
        if r[0].startswith(prefix)}
    todo = _changed(root, walk.files, existing)
    stats["unchanged"] = len(walk.files) - len(todo)
    rejected: dict[str, str] = {}
    missing = set(existing) - set(walk.files) - walk.unreadable
    hash_of = functools.cache(functools.partial(text_hash, root))   # a file's text hash is read once per sync
    if not force and not prefix and existing and len(missing) == len(existing) and (not walk.files
                                                                                  or len(existing) >= WIPE_MIN):
        _refuse_wipe(root, existing, walk.files, hash_of)
    renames = Renames(conn, missing, new_files=bool(todo))
    markdown_of = functools.partial(markdown_text, root)
    writing, stats["removed"] = renames.plan(conn, existing, todo, hash_of, markdown_of)
    renames.plan_edited(conn, [rel for rel in todo if rel not in writing], hash_of, markdown_of)
    vanished = _write_documents(conn, root, todo, writing, stats, rejected, progress, renames)
    kept = renames.settle(existing, walk.files, rejected, rejected_files(conn), stats)
    gone = sorted((missing | (vanished & set(existing))) - kept)
    _delete_documents(conn, gone, stats)
    folders = settle_folders(root, walk, started_ns)
    with transaction(conn):
        _record_rejected(conn, prefix, rejected)
        record_folders(conn, prefix, folders)
        used = {r[0] for r in conn.execute("SELECT keywords_file FROM documents WHERE keywords_file IS NOT NULL")}
        stats["warnings"] += orphans.settle(conn, root, [o for o in walk.orphans if o not in used], prefix,
                                            stats.get("renames") or [])  # (a file given with `add --keywords` is used)
    if base == root:  # `sync` and `sync <the KB root>` alike
        with transaction(conn):
            stats["similarities"] = sync_similarities(conn, root, stats["errors"], stats["warnings"], force)
    # large knowledge bases: the sparse full-text index (a large fold: with a helper process, unless reading
    # in this process was asked for)
    fulltext = (refresh_sparse(conn, progress, helper=helper_process)
                if worker_count(PARALLEL_MIN_DOCS) and fold_is_large(conn)
                else refresh_sparse(conn, progress))
    if fulltext["built"]:
        stats["fulltext_index"] = fulltext
    return stats


#: A sync of the whole root that finds none of the indexed documents is refused when the root holds no document at
#: all, or when it would remove at least this many (a one-note knowledge base whose note was replaced is not a wrong
#: root; a folder of it emptied, ``sync DIR``, is not one either).
WIPE_MIN = 5


def _refuse_wipe(root: Path, existing: dict[str, Known], on_disk: dict[str, str],
                 hash_of: Callable[[str], str | None]) -> None:
    """A sync that finds none of the indexed documents (a wrong ``--kb``, a folder not mounted, an index
    re-pointed by ``init --kb``) would remove them all, with what was learned about them: refused, nothing
    written, unless one of them only moved (its text is among the files found) or ``force``."""
    texts = {known[3] for known in existing.values() if known[3]}
    if any(hash_of(rel) in texts for rel in on_disk):
        return   # moved: the renames pair them
    raise KbError(f"None of the {len(existing)} indexed documents is in {root} (a wrong --kb, a folder that is not "
                  f"mounted?): this sync would remove them all, with what was learned about them. Nothing was "
                  f"changed. If they were deleted on purpose: kbindex sync --force", code="would_remove_all")


def _changed(root: Path, on_disk: dict[str, str], existing: dict[str, Known]) -> list[str]:
    """The documents whose stat signature differs from the stored one (new ones included)."""
    todo = []
    for rel, sig in on_disk.items():
        known = existing.get(rel)
        if known is not None and known[2] and known[2] != default_keywords_rel(rel):
            try:  # given its keywords file with `add --keywords`: compare with that file's signature
                sig = disk_sig(root, rel, known[2])
            except KbError:
                pass
        if known is None or known[1] != sig:
            todo.append(rel)
    todo.sort()
    return todo


def _write_documents(conn: Connection, root: Path, todo: list[str], existing: dict[str, Known],
                     stats: Report, rejected: dict[str, str],
                     progress: Progress | None, renames: Renames) -> set[str]:
    """Read (see :mod:`reader`) and store ``todo`` in batches; returns the files that vanished before they
    could be read. Storing reads nothing, so its failures are the database's (disk full, a lock): they
    abort the batch, which rolls back whole (no half-stored document, no per-document savepoint)."""
    vanished: set[str] = set()
    done = 0
    ids = KeywordIds(conn)  # valid across batches: a batch that rolls back ends the sync
    stored = {rel: existing[rel][2] for rel in todo if rel in existing}
    for batch in _batches(read_all(root, todo, stored), conn):
        with transaction(conn):
            fts_rows: list[FtsRow] = []  # written last (see upsert_document)
            for rel, doc in _keywords_known(conn, ids, batch, existing):
                known = existing.get(rel)
                if isinstance(doc, str):
                    _file_failed(root, rel, known, doc, stats, rejected, vanished)
                else:
                    _store_read(conn, ids, doc, known, stats, fts_rows, renames)
                    if doc.problems:  # indexed without its bad keywords file: read (and reported) again
                        _reject(root, rel, None, rejected)  # by every sync, not counted by the stale check
                done += 1
                if progress:
                    progress(done, len(todo))
            renames.follow(conn)
            write_fts_rows(conn, fts_rows)
        stats["batches"] += 1
    return vanished


def _keywords_known(conn: Connection, ids: KeywordIds, batch: Iterator[tuple[str, LoadedDocument | str]],
                    existing: dict[str, Known]) -> Iterator[tuple[str, LoadedDocument | str]]:
    """The batch; on PostgreSQL read ``KEYWORD_CHUNK`` documents at a time and the keyword ids of those it will
    store found (or made) in one or two round trips, in the order storing them one by one would make them (a
    document's own look-up was a round trip each). Reading stays interleaved with storing, so a batch's time
    limit still counts both."""
    if not round_trips(conn):
        yield from batch
        return
    while chunk := list(itertools.islice(batch, KEYWORD_CHUNK)):
        ids.ensure_all([(kw, category) for rel, doc in chunk if not isinstance(doc, str)
                        and (rel not in existing or existing[rel][0] != doc.content_hash)
                        for kw, category, _ in doc.keywords])
        yield from chunk


KEYWORD_CHUNK = 64


def _store_read(conn: Connection, ids: KeywordIds, doc: LoadedDocument, known: Known | None, stats: Report,
                fts_rows: list[FtsRow],
                renames: Renames) -> None:
    stats["warnings"] += [{"file": doc.filepath, "message": w} for w in doc.warnings]
    stats["errors"] += doc.problems  # a bad keywords file: the document is indexed without it
    stats["errors"] += [{"file": doc.filepath, "message": e, "indexed": True} for e in doc.errors]
    if known is None and renames and renames.take(conn, doc.filepath, doc.text_hash):
        _store(conn, ids, doc, fts_rows)  # a renamed document keeps its id; stored as read from its new path
        stats["renamed"] += 1
    elif known is not None and known[0] == doc.content_hash:
        conn.execute("UPDATE documents SET stat_sig = ?, text_hash = ? WHERE filepath = ?",
                     (doc.stat_sig, doc.text_hash, doc.filepath))
        stats["unchanged"] += 1
    else:
        _store(conn, ids, doc, fts_rows, stored=known is not None)
        stats["added" if known is None else "updated"] += 1


def _file_failed(root: Path, rel: str, known: Known | None, message: str, stats: Report, rejected: dict[str, str],
                 vanished: set[str]) -> None:
    """A stored document that became unreadable keeps its index rows until it is fixed or deleted (the
    message says so: its edits are not indexed meanwhile)."""
    kept = f"; {rel} keeps its indexed version (later edits are not indexed) until this is fixed" if known else ""
    stats["errors"].append({"file": rel, "message": message + kept})
    if not os.path.exists(root / rel):
        vanished.add(rel)  # deleted meanwhile, or a dangling symlink: not in the KB any more
        return
    _reject(root, rel, (known or (None, None, None))[2], rejected)


def _reject(root: Path, rel: str, stored_keywords_file: str | None, rejected: dict[str, str]) -> None:
    """The stale check leaves a file sync reported alone until it changes again."""
    try:
        rejected[rel] = disk_sig(root, rel, stored_keywords_file)
    except KbError:
        pass


def _delete_documents(conn: Connection, gone: list[str], stats: Report) -> None:
    for rel, (_, _, n, marks) in sorted(hanging_off(conn, gone).items()):   # said, not silent (a rename with edits)
        what = " and ".join(x for x in (f"{n} learned item{'s' * (n != 1)}" if n else "",
                                        f"{marks} feedback mark{'s' * (marks != 1)}" if marks else "") if x)
        stats["warnings"].append({"file": rel, "message": f"{rel} removed with {what} about it (the feedback stays "
                                  "under this path; a renamed document keeps both when its text is unchanged, or "
                                  "mostly: see `renames`)"})
    for batch in _batches(gone, conn):
        with transaction(conn):
            for rel in batch:
                conn.execute("DELETE FROM documents WHERE filepath = ?", (rel,))
                stats["removed"] += 1
        stats["batches"] += 1


def _record_rejected(conn: Connection, prefix: str, rejected: dict[str, str]) -> None:
    kept = {k: v for k, v in rejected_files(conn).items() if not k.startswith(prefix)}
    kept.update(rejected)
    if kept:
        meta.put_json(conn, REJECTED_FILES_KEY, kept)
    else:
        meta.delete(conn, REJECTED_FILES_KEY)


