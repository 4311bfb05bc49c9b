"""Has the knowledge base changed since the last sync? (cheap; no file is read)

Walks the KB root as ``sync`` does (:mod:`kb_indexer.index.walk`), and compares each
file's stat signature (``"{mtime_ns}:{size}"``, plus ``"|{mtime_ns}:{size}"`` of
its ``.keywords.json`` when there is one: see :func:`kb_indexer.index.paths.stat_sig`)
and the set of files with what the index stores. A document given its keywords
file with ``add --keywords`` is compared with that file's signature instead.
Files the last sync rejected (reported in its ``errors``) are not counted
again until they change. ``similarities.json`` files are compared by content
hash, as ``sync`` does; one that disappeared counts too. One ``stat`` per
markdown file (two with a keywords file) and a few SQL queries: see
``bench/ir_eval.py --stale`` for its cost.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from kb_indexer.index.walk import scan

# meta key: {filepath: stat signature} of the markdown files the last sync rejected
REJECTED_FILES_KEY = "rejected_files"
# documents whose stored keywords file is not their default ``<stem>.keywords.json`` (.md or .markdown)
_EXPLICIT_SQL = ("SELECT filepath, keywords_file FROM documents WHERE keywords_file IS NOT NULL AND keywords_file "
                 "NOT IN (substr(filepath, 1, length(filepath) - 3) || '.keywords.json', "
                 "substr(filepath, 1, length(filepath) - 9) || '.keywords.json')")


def rejected_files(conn: sqlite3.Connection) -> dict[str, str]:
    """``{filepath: stat signature}`` of the markdown files the last sync reported as errors."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (REJECTED_FILES_KEY,)).fetchone()
    try:
        data = json.loads(row[0]) if row and row[0] else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def check(conn: sqlite3.Connection, kb_root: Path, examples: int = 5) -> dict[str, Any]:
    """What changed on disk since the last sync: ``{"stale", "changed", "added", "removed", ...}``."""
    start = time.perf_counter()
    root = Path(kb_root)
    if not root.is_dir():
        return {"stale": False, "checked": False, "reason": f"knowledge-base root {root} does not exist",
                "seconds": round(time.perf_counter() - start, 6)}
    root = root.resolve()
    stored = dict(conn.execute("SELECT filepath, stat_sig FROM documents").fetchall())
    on_disk = scan(root).files
    _explicit_keywords(conn, root, on_disk)
    if on_disk == stored:       # the common case, compared in C
        added = removed = changed = []
    else:
        rejected = rejected_files(conn)
        added = sorted(p for p in on_disk.keys() - stored.keys() if rejected.get(p) != on_disk[p])
        removed = sorted(stored.keys() - on_disk.keys())
        changed = sorted(p for p in on_disk.keys() & stored.keys()
                         if on_disk[p] != stored[p] and rejected.get(p) != on_disk[p])
    from kb_indexer.index.similarity_sync import similarities_changed

    sims = similarities_changed(conn, root)
    return {
        "stale": bool(added or removed or changed or sims),
        "checked": True,
        "added": len(added), "removed": len(removed), "changed": len(changed),
        "similarities_changed": sims,
        "examples": (changed + added + removed)[:examples],
        "files": len(on_disk),
        "seconds": round(time.perf_counter() - start, 6),
    }


def _explicit_keywords(conn: sqlite3.Connection, root: Path, on_disk: dict[str, str]) -> None:
    """Signatures of documents given their keywords file with ``add --keywords``, as sync computes them."""
    rows = conn.execute(_EXPLICIT_SQL).fetchall()
    if not rows:
        return
    from kb_indexer.errors import KbError
    from kb_indexer.index.paths import explicit_keywords_file, stat_sig

    for rel, stored in rows:
        kw = explicit_keywords_file(root, rel, stored)
        if kw is not None and rel in on_disk:
            try:
                on_disk[rel] = stat_sig(root / rel, kw)
            except KbError:
                continue


def message(info: dict[str, Any]) -> str | None:
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
