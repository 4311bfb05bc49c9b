"""Keywords files without their note: ``NAME.keywords.json`` with no ``NAME.md`` beside it, as a sync finds them.

* One that holds only what enrich generated (:func:`kb_indexer.index.generated.only_generated`) goes with its
  note: sync deletes it and says so in ``warnings`` (enrich writes one again for a note of that name).
* A person's stays, and is named in ``warnings`` by the sync that first finds it, once: later syncs say nothing
  of it while it is unchanged (its stat signature is kept in ``meta``), and name it again when it changes.
* One that a document names as its keywords file (``add --keywords``) is not an orphan.

A generated one is removed from its folder opened beneath the root through no symlink
(:func:`kb_indexer.beneath.open_folder`), and only while it is the very file judged (device, inode, size and
mtime): a folder swapped for a symlink after the walk (to a folder elsewhere, or to another folder of the
knowledge base whose note is there) leads the removal nowhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from kb_indexer.beneath import SUPPORTED, open_folder
from kb_indexer.errors import KbError
from kb_indexer.index.files import load_keywords_file
from kb_indexer.index.generated import only_generated
from kb_indexer.index.paths import default_keywords_rel, sig_of
from kb_indexer.limits import max_doc_bytes, parse_json
from kb_indexer.store import meta
from kb_indexer.store.dbapi import Connection

#: meta key: {orphan keywords file of a person's: its stat signature when a sync named it}
REPORTED_KEY = "orphan_keywords_files"


def settle(conn: Connection, root: Path, orphans: list[str], prefix: str,
           renames: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Delete the generated ``orphans``, remember the person's; the warnings to give (inside the caller's
    transaction: the record of what was named is written with the sync's bookkeeping)."""
    reported = meta.get_json(conn, REPORTED_KEY)
    kept = {rel: sig for rel, sig in reported.items() if not rel.startswith(prefix)}
    warnings = []
    for rel in orphans:
        moved = next((r["to"] for r in renames if default_keywords_rel(r["from"]) == rel), None)
        sig = _regular_sig(root / rel)
        message = _message(rel, moved)
        if sig is not None:
            try:
                if _remove_if_generated(root, rel):
                    warnings.append({"file": rel, "message": _removed(rel, moved)})
                    continue
            except OSError as exc:
                message = f"{rel}: enrich wrote it for a note that is gone, but it cannot be removed: {exc.strerror}"
        kept[rel] = sig or ""
        if reported.get(rel) != kept[rel]:
            warnings.append({"file": rel, "message": message})
    if kept and kept != reported:
        meta.put_json(conn, REPORTED_KEY, kept)
    elif not kept and reported:
        meta.delete(conn, REPORTED_KEY)
    return warnings


def _regular_sig(path: Path) -> str | None:
    """The stat signature of a regular file (not followed if a symlink), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return sig_of(st) if stat.S_ISREG(st.st_mode) else None


def _remove_if_generated(root: Path, rel: str) -> bool:
    """Remove the orphan ``rel`` if enrich wrote all of it: the file read and judged is the one removed, from its
    folder reached through no symlink (False: a person's, not a regular file, changed meanwhile, or its folder
    is reached through a symlink). OSError: it could not be removed."""
    if not SUPPORTED:   # no dir_fd (Windows): by its path
        if not _generated(root, rel) or _regular_sig(root / rel) is None:
            return False
        os.unlink(root / rel)
        return True
    folder_rel, _, name = rel.rpartition("/")
    try:
        folder = open_folder(root, root / folder_rel if folder_rel else root, rel)
    except (OSError, KbError):
        return False
    try:
        judged = _judged(folder, name, rel)
        try:
            now = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            return False
        if judged is None or _identity(now) != judged:
            return False
        os.unlink(name, dir_fd=folder)
        return True
    finally:
        os.close(folder)


def _judged(folder: int, name: str, rel: str) -> tuple[int, ...] | None:
    """The identity of the regular file ``name`` of ``folder`` (not followed if a symlink) if enrich wrote all of
    it, else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        raw = fh.read(max_doc_bytes() + 1)
    try:
        data = parse_json(raw.decode("utf-8"), rel) if len(raw) <= max_doc_bytes() else None
    except (UnicodeDecodeError, KbError):   # not UTF-8, not JSON: not enrich's
        return None
    return _identity(st) if isinstance(data, dict) and only_generated(data) else None


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _generated(root: Path, rel: str) -> bool:
    try:
        data, _ = load_keywords_file(root, root / rel, rel)
    except KbError:     # unreadable, not JSON: not enrich's
        return False
    return isinstance(data, dict) and only_generated(data)


def _removed(orphan: str, moved: str | None) -> str:
    if moved:
        return (f"removed {orphan}, which enrich wrote for a note now renamed to {moved} (nothing in it was a "
                f"person's; `kbindex enrich {moved}` writes that note's)")
    return f"removed {orphan}, which enrich wrote for a note that is gone (nothing in it was a person's)"


def _message(orphan: str, moved: str | None) -> str:
    """Why a person's keywords file has no document, and what to do: its note renamed in this sync is named."""
    if moved:
        what = (f"its note was renamed to {moved}; rename this file to {default_keywords_rel(moved)} and set its "
                f"filepath to {moved!r} (or delete it)")
    else:
        what = ("no markdown document beside it (its note renamed? rename this file to match, NAME.keywords.json "
                "beside NAME.md, and set its filepath; or delete it)")
    return f"{orphan}: keywords file left behind, not indexed: {what}; said once, again only if the file changes"
