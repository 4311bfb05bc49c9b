"""Has the knowledge base changed since the last sync? (cheap; a file is read only when its signature changed)

Walks the KB root as ``sync`` does (:mod:`kb_indexer.index.walk`), and compares each
file's stat signature (``"{mtime_ns}:{size}"``, plus ``"|{mtime_ns}:{size}"`` of
its ``.keywords.json`` when there is one: see :func:`kb_indexer.index.paths.stat_sig`)
and the set of files with what the index stores. A document given its keywords
file with ``add --keywords`` is compared with that file's signature instead.
Files the last sync rejected (reported in its ``errors``) are not counted
again until they change. ``similarities.json`` files are compared by content
hash, as ``sync`` does; one that disappeared counts too. One ``stat`` per
markdown file (two with a keywords file) and a few SQL queries: see
``bench/ir_eval.py --stale`` for its cost. A file whose signature changed is read
(the first ``VERIFY_MAX`` of them) and counts only if its content did too: a
checkout at another path (a team member's sync), a copy or a ``touch`` keep it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from kb_indexer.errors import KbError
from kb_indexer.index.paths import KEYWORDS_SUFFIX, explicit_keywords_file, stat_sig
from kb_indexer.index.similarity_sync import similarities_changed
from kb_indexer.index.walk import Walk, list_mark, scan
from kb_indexer.store import meta
from kb_indexer.store.team import shared
from kb_indexer.store.dbapi import Connection

if TYPE_CHECKING:
    from kb_indexer.results import StaleNote

# meta key: {filepath: stat signature} of the markdown files the last sync rejected
REJECTED_FILES_KEY = "rejected_files"
# documents whose stored keywords file is not their default ``<stem>.keywords.json`` (.md or .markdown)
_EXPLICIT_SQL = ("SELECT filepath, keywords_file FROM documents WHERE keywords_file IS NOT NULL "
                 "AND keywords_file NOT IN (substr(filepath, 1, length(filepath) - 3) || '.keywords.json', "
                 "substr(filepath, 1, length(filepath) - 9) || '.keywords.json')")  # = m060's partial index


def rejected_files(conn: Connection) -> dict[str, str]:
    """``{filepath: stat signature}`` of the markdown files the last sync reported as errors."""
    return meta.get_json(conn, REJECTED_FILES_KEY)


# meta keys recorded by sync (see ``settle_folders``): {folder ("" / "a/" / "a/b/"): [mtime_ns, seen_ns]}, and
# {folder: its entries mark} (:func:`kb_indexer.index.walk.entries_mark`; a key of its own, so an older
# kbindex reads the first as it wrote it)
FOLDERS_KEY = "folder_mtimes"
MARKS_KEY = "folder_marks"
# Up to this many indexed documents the check stats every file; above, it is the quick check.
FULL_CHECK_MAX_FILES = 5000
# The quick check also stats this many most recently indexed documents (in-place edits of the notes
# being worked on).
RECENT_FILES = 1000
# A folder whose mtime is this close to when sync looked at it may hide a change made in the same tick:
# until a sync records it as seen later (see ``settle_folders``), every check lists its names again and
# compares their mark with the one sync recorded (and lists it in full when they differ).
SETTLE_NS = 2_000_000_000
#: What a sync records of a folder: ``[mtime_ns, seen_ns, entries mark or None]``.
_Folder = list[Any]
_TOP = "\U0010ffff"  # sorts after any other text: [p, p + _TOP) is every path starting with p


def record_folders(conn: Connection, prefix: str, folders: dict[str, _Folder]) -> None:
    """Remember the folders a sync walked (all under ``prefix``): ``{folder: [mtime_ns, seen_ns, mark]}``."""
    state = {k: v for k, v in (_decode_state(conn) or {}).items() if not k.startswith(prefix)}
    marks = {k: v for k, v in meta.get_json(conn, MARKS_KEY).items() if not k.startswith(prefix)}
    state.update((k, v[:2]) for k, v in folders.items())
    marks.update((k, v[2]) for k, v in folders.items() if v[2] is not None)
    meta.put_json(conn, FOLDERS_KEY, state)
    meta.put_json(conn, MARKS_KEY, marks)


def _unsettled(mtime_ns: int, seen_ns: int) -> bool:
    """May a change made after the folder was listed at ``seen_ns`` still have left its mtime unchanged?"""
    return mtime_ns > seen_ns - SETTLE_NS


def settle_folders(root: Path, walk: Walk, walked_ns: int) -> dict[str, _Folder]:
    """The ``{folder: [mtime_ns, seen_ns, mark]}`` a sync records after its walk (begun at ``walked_ns``).

    A folder written to within ``SETTLE_NS`` of the walk may hide a file added in the same mtime tick after
    it was listed, so the quick check lists its names again (and in full if they changed). Once that window
    has passed (a long first sync of a freshly written knowledge base), each such folder's names are listed
    once more here: if its mtime and entries (names, inode numbers) are what the walk saw, it is recorded as
    seen now, and a later change shows as a new mtime: the queries after the first sync check no folder's
    entries at all."""
    folders: dict[str, _Folder] = {pre: [m, walked_ns, walk.folder_marks.get(pre)]
                                  for pre, m in walk.folder_mtimes.items()}
    for pre, (mtime, _, mark) in folders.items():
        seen_ns = time.time_ns()   # before the folder's stat: a change after it shows
        if mark is None or not _unsettled(mtime, walked_ns) or _unsettled(mtime, seen_ns):
            continue               # settled already, or still within the window (compared by the checks)
        folder = os.path.join(root, pre) if pre else str(root)
        try:
            unchanged = os.stat(folder).st_mtime_ns == mtime and list_mark(folder) == mark
        except OSError:
            continue
        if unchanged:
            folders[pre] = [mtime, seen_ns, mark]
    return folders


def _decode_state(conn: Connection) -> dict[str, _Folder] | None:
    """The folders recorded by the last syncs, ``{folder: [mtime_ns, seen_ns]}`` (None: none recorded)."""
    data = meta.get_json(conn, FOLDERS_KEY)
    return data if "" in data else None


def _folder_state(conn: Connection) -> dict[str, _Folder] | None:
    """``{folder: [mtime_ns, seen_ns, mark or None]}`` for the quick check."""
    state = _decode_state(conn)
    if state is None:
        return None
    marks = meta.get_json(conn, MARKS_KEY)
    return {k: [*v[:2], marks.get(k)] for k, v in state.items()}


def check(conn: Connection, kb_root: Path, examples: int = 5, *, full: bool = False) -> dict[str, Any]:
    """What changed on disk since the last sync: ``{"stale", "changed", "added", "removed", "mode", ...}``.

    ``mode`` ``full`` stats every file (knowledge bases up to ``FULL_CHECK_MAX_FILES`` documents, or
    ``full=True``). ``quick`` (larger ones) stats every folder, lists only the folders whose mtime changed
    (files added, deleted or renamed, and editors that save by replacing the file), and stats the
    ``RECENT_FILES`` most recently indexed documents; an in-place edit of an older file is found by
    ``sync`` or a full check.
    """
    start = time.perf_counter()
    root = Path(kb_root)
    if not root.is_dir():
        return {"stale": False, "checked": False, "reason": f"knowledge-base root {root} does not exist",
                "seconds": round(time.perf_counter() - start, 6)}
    root = root.resolve()
    state = None if full else _folder_state(conn)
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    if state is None or total <= FULL_CHECK_MAX_FILES:
        stored = dict(conn.execute("SELECT filepath, stat_sig FROM documents").fetchall())
        on_disk = scan(root, marks=False).files
        info: dict[str, Any] = {"mode": "full", "files": len(on_disk)}
    else:
        stored, on_disk, info = _quick(conn, root, state)
        info["files"] = total
    _explicit_keywords(conn, root, on_disk)
    added, removed, changed = _compare(conn, stored, on_disk)
    changed = _content_changed(conn, root, changed)
    sims = similarities_changed(conn, root)
    return {
        "stale": bool(added or removed or changed or sims),
        "checked": True,
        "added": len(added), "removed": len(removed), "changed": len(changed),
        "similarities_changed": sims,
        "examples": (changed + added + removed)[:examples],
        **info,
        "seconds": round(time.perf_counter() - start, 6),
    }


def _compare(conn: Connection, stored: dict[str, str],
             on_disk: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    if on_disk == stored:       # the common case, compared in C
        return [], [], []
    rejected = rejected_files(conn)
    added = sorted(p for p in on_disk.keys() - stored.keys() if rejected.get(p) != on_disk[p])
    removed = sorted(stored.keys() - on_disk.keys())
    changed = sorted(p for p in on_disk.keys() & stored.keys()
                     if on_disk[p] != stored[p] and rejected.get(p) != on_disk[p])
    return added, removed, changed


#: Files whose signature changed that the check reads to compare their content with the index (more count as
#: changed unread: a check stays bounded whatever happened to the folder).
VERIFY_MAX = 64


def _content_changed(conn: Connection, root: Path, changed: list[str]) -> list[str]:
    """Of the files whose stat signature changed, those whose content changed too (the first ``VERIFY_MAX`` are
    read as sync reads them; the others count as changed)."""
    if not changed:
        return changed
    from kb_indexer.index.loader import load_document  # lazy: markdown parsing, only when signatures changed

    head = changed[:VERIFY_MAX]
    stored = {p: (h, kf) for p, h, kf in conn.execute(
        "SELECT filepath, content_hash, keywords_file FROM documents WHERE filepath IN (SELECT value FROM json_each(?))",
        (json.dumps(head),)).fetchall()}
    out = []
    for rel in head:
        digest, kw_file = stored.get(rel, (None, None))
        try:
            doc = load_document(root, rel, explicit_keywords_file(root, rel, kw_file), lenient=True)
        except (KbError, OSError):
            doc = None
        if doc is None or doc.content_hash != digest:
            out.append(rel)
    return out + changed[VERIFY_MAX:]


def _quick(conn: Connection, root: Path, state: dict[str, _Folder]) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    """(stored signatures, on-disk signatures) of the files the quick check looked at, and what it covered."""
    listed, trees, compared = _changed_folders(root, state)
    on_disk: dict[str, str] = {}
    for pre in listed:
        walk = scan(root, pre, recursive=False, marks=False)
        on_disk.update(walk.files)
        for sub in walk.subfolders:
            if sub not in state:  # a new folder: everything in it is new
                trees.append(sub)
    for pre in trees:
        if (root / pre).is_dir():
            on_disk.update(scan(root, pre, marks=False).files)
    stored: dict[str, str] = {}
    for pre in listed:
        stored.update((p, sig) for p, sig in _stored_under(conn, pre) if "/" not in p[len(pre):])
    for pre in trees:
        stored.update(_stored_under(conn, pre))
    recent = conn.execute("SELECT filepath, stat_sig FROM documents ORDER BY updated_at DESC LIMIT ?",
                          (RECENT_FILES,)).fetchall()
    top = str(root)
    for rel, sig in recent:
        if rel not in stored:
            stored[rel] = sig
            now = _disk_sig(top, rel, "|" in (sig or ""))
            if now is not None:
                on_disk[rel] = now
    return stored, on_disk, {"mode": "quick", "folders": len(state), "folders_listed": len(listed) + len(trees),
                             "folders_compared": compared,
                             "recent_checked": len(recent)}


def _changed_folders(root: Path, state: dict[str, _Folder]) -> tuple[list[str], list[str], int]:
    """Folders whose mtime moved (or whose entries changed within the same tick), folders that are gone, and
    how many folders' entries were compared (those still within the settle window)."""
    listed, gone, compared = [], [], 0
    for pre, (mtime, walked, mark) in state.items():
        folder = os.path.join(root, pre) if pre else str(root)
        try:
            now = os.stat(folder).st_mtime_ns
        except OSError:
            gone.append(pre)
            continue
        if now == mtime and _unsettled(now, walked) and mark is not None:
            compared += 1
            if list_mark(folder) == mark:
                continue
        if now != mtime or _unsettled(now, walked):
            listed.append(pre)
    return listed, gone, compared


def _stored_under(conn: Connection, pre: str) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]]
    if not pre:
        rows = conn.execute("SELECT filepath, stat_sig FROM documents").fetchall()
        return rows
    rows = conn.execute("SELECT filepath, stat_sig FROM documents WHERE filepath >= ? AND filepath < ?",
                        (pre, pre + _TOP)).fetchall()
    return rows


def _disk_sig(root: str, rel: str, had_keywords: bool) -> str | None:
    """The stat signature the walk would give ``rel`` under the folder ``root`` (None: gone or not a regular
    file). Its keywords file is looked at only if it had one (``had_keywords``): a keywords file written since
    is a new name in its folder, which moves the folder's mtime, and the folder check lists it."""
    md = f"{root}/{rel}"
    try:
        st = os.stat(md)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    sig = f"{st.st_mtime_ns}:{st.st_size}"   # sig_of, inline: this runs for a thousand files a question
    if not had_keywords:
        return sig
    stem = md[: -len(".markdown")] if md[-9:].lower() == ".markdown" else md[: -len(".md")]
    try:
        kst = os.stat(stem + KEYWORDS_SUFFIX)
        if stat.S_ISREG(kst.st_mode):
            sig += f"|{kst.st_mtime_ns}:{kst.st_size}"
    except OSError:
        pass
    return sig


def _explicit_keywords(conn: Connection, root: Path, on_disk: dict[str, str]) -> None:
    """Signatures of documents given their keywords file with ``add --keywords``, as sync computes them."""
    rows = conn.execute(_EXPLICIT_SQL).fetchall()
    if not rows:
        return
    for rel, stored in rows:
        kw = explicit_keywords_file(root, rel, stored)
        if kw is not None and rel in on_disk:
            try:
                on_disk[rel] = stat_sig(root / rel, kw)
            except KbError:
                continue


def message(info: Mapping[str, Any]) -> str | None:
    """A one-line stderr warning, or None when the index is up to date."""
    if not info.get("stale"):
        return None
    parts = [f"{info[k]} {k}" for k in ("changed", "added", "removed") if info.get(k)]
    if info.get("similarities_changed"):
        parts.append("similarities.json changed")
    ex = info.get("examples") or []
    shown = f" (e.g. {', '.join(ex[:3])})" if ex else ""
    return (f"the index is out of date: {', '.join(parts)} since the last sync{shown}; "
            "run `kbindex sync` or pass --sync")


def note(conn: Connection, kb_root: Path, stale: Callable[[], Mapping[str, Any]]) -> StaleNote | None:
    """``KnowledgeBase.stale_note``: the :func:`message` of ``stale()`` with its counts, or, on a shared
    (PostgreSQL) index whose files are not on this machine, that nothing is checked; None: up to date."""
    if shared(conn) and not kb_root.is_dir():
        return {"message": f"the knowledge-base root {kb_root} is not on this machine: the stale check is skipped "
                "(results come from the shared index as last synced)", "checked": False, "changed": 0,
                "added": 0, "removed": 0}
    info = stale()
    said = message(info)
    return None if said is None else {"message": said, "checked": True, "changed": info.get("changed", 0),
                                      "added": info.get("added", 0), "removed": info.get("removed", 0)}
