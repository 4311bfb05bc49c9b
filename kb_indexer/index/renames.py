"""Renames in a sync: a new file with the markdown text of a document whose file vanished takes over that
document, so its id, and all that hangs off the id, stay (keywords, learned items, vectors, full-text row).

Rules (one sync, within its folder scope: after ``sync DIR`` a file moved out of DIR is removed, as before,
so run a plain ``sync`` after moving files between folders):

- A pair is a stored document whose file is gone and a file new to the index whose markdown text is the
  same (``documents.text_hash``: the keywords file is not part of it). A rename plus an edit in one sync is
  not detected: it is a removal and an addition, as before. So is a document indexed by an older kbindex
  with a keywords file and not read since (its text hash is not known yet).
- Several vanished documents with the same text: new files of that text take them in path order, each the
  vanished one with the same file name first, else the first in path order. New files left over are added;
  vanished documents left over are removed.
- The renamed document is read from its new path: its title (when it comes from the file name), its
  default keywords file (``<new stem>.keywords.json``: moved along, it is used; left behind, it is an
  orphan and the document keeps no file keywords) and its full-text row are those of the new path. A
  keywords file given with ``add --keywords`` is not carried over.
- A vanished document is kept (not removed) while a new file with a markdown file of the same size could
  not be read in this sync (``git mv`` of a document and its keywords file, whose ``filepath`` still names
  the old path, is refused until that is fixed): the sync after the fix pairs them. It is reported in
  ``warnings``.
- What stores the path instead of the id follows in the same transaction: feedback (``query_feedback``),
  the recorded results of queries (``query_attempts.top_results``) and the learned items' details.

Sync writes new files in batches and removes vanished ones after the last batch, so a vanished document is
never removed before the batch that could rename it (a sync killed in between renames the rest next time).
"""

from __future__ import annotations

import json
import sqlite3
from posixpath import basename

from kb_indexer.store.document_paths import follow_paths, move_document


class Renames:
    """The vanished documents a sync can rename, by text hash; ``take`` moves one to a new path."""

    def __init__(self, conn: sqlite3.Connection, vanished: set[str], new_files: bool):
        self.vanished = vanished
        self.by_text: dict[str, list[str]] = {}
        paths = sorted(vanished) if new_files else []
        if paths:
            rows = conn.execute("SELECT filepath, text_hash FROM documents WHERE text_hash IS NOT NULL AND filepath IN "
                                "(SELECT value FROM json_each(?)) ORDER BY filepath", (json.dumps(paths),))
            for path, text in rows:
                self.by_text.setdefault(text, []).append(path)
        self.done: list[dict[str, str]] = []  # {"from", "to"} in the order renamed
        self._pending: list[tuple[str, str]] = []  # renamed in this batch, paths not yet followed

    def __bool__(self) -> bool:
        return bool(self.by_text)

    def take(self, conn: sqlite3.Connection, new_path: str, text_hash: str | None) -> bool:
        """Give ``new_path`` the document of a vanished file with this text (False: none)."""
        candidates = self.by_text.get(text_hash or "")
        if not candidates:
            return False
        name = basename(new_path)
        old = next((p for p in candidates if basename(p) == name), candidates[0])
        candidates.remove(old)
        move_document(conn, old, new_path)
        self.done.append({"from": old, "to": new_path})
        self._pending.append((old, new_path))
        return True

    def settle(self, existing: dict[str, tuple], on_disk: dict[str, str], rejected: dict[str, str],
               stats: dict) -> set[str]:
        """After the last batch: the vanished paths sync must not remove (renamed, or held back; see
        :func:`held_back`), with ``renames`` and the warnings in ``stats``."""
        moved = {r["from"] for r in self.done}
        kept = held_back(self.vanished - moved, existing, on_disk, rejected)
        stats["renames"] = self.done
        stats["warnings"] += [{"file": old, "message": f"{old} is gone but its document is kept: {new} could not "
                               "be read and may be it renamed (fix it and sync again)"} for old, new in kept.items()]
        return moved | set(kept)

    def follow(self, conn: sqlite3.Connection) -> None:
        """Move what stores the renamed documents' paths (call in the transaction that renamed them)."""
        if self._pending:
            follow_paths(conn, dict(self._pending))
            self._pending.clear()


def held_back(missing: set[str], existing: dict[str, tuple], on_disk: dict[str, str],
              rejected: dict[str, str]) -> dict[str, str]:
    """``{vanished path: new path}``: vanished documents to keep because a new file of the same markdown
    size (``existing``: path -> (content hash, stat signature, ...); signatures: ``mtime:size[|...]``)
    could not be read in this sync, and may be that document renamed."""
    failed: dict[str, str] = {}
    for rel in sorted(rejected):
        if rel not in existing and rel in on_disk:
            failed.setdefault(_size(on_disk[rel]), rel)
    if not failed:
        return {}
    return {old: failed[_size(existing[old][1])] for old in sorted(missing)
            if existing[old][1] and _size(existing[old][1]) in failed}


def _size(sig: str) -> str:
    return sig.split("|", 1)[0].rpartition(":")[2]
