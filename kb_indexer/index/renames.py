"""Renames in a sync: a new file with the markdown text of a document whose file vanished takes over that
document, so its id, and all that hangs off the id, stay (keywords, learned items, vectors, full-text row).

Rules (one sync, within its folder scope: after ``sync DIR`` a file moved out of DIR is removed, as before,
so run a plain ``sync`` after moving files between folders):

- A pair is a stored document whose text left its file and a file whose markdown text is that text
  (``documents.text_hash``: the keywords file is not part of it). The text left its file when the file is
  gone, or when the file is still there with another text (a changed path). The file taking the document is
  a new file, or a changed path whose new text is another document's old text: ``mv a.md b.md`` over an
  indexed b.md gives b.md a's document and removes b's (as if b.md had been deleted); two files that swap
  names swap their documents (any permutation of texts among files alike). A changed path that takes no
  document and still holds ``EDITED_MIN`` of its old three-word sequences keeps its document (an edit:
  ``cp a.md copy.md`` then an edit of a.md leaves a's document at a.md; the copy is new). One that takes
  none and holds another text (``mv a.md z.md``, then a new a.md) lets its document follow its text, and is
  a new document; one whose document nobody took is updated in place, as before. A document indexed by an older kbindex with a keywords
  file and not read since (its text hash is not known yet) is a removal and an addition.
- A rename plus an edit in one sync (an editor's rename-and-save, a ``git pull``): a vanished document that
  something hangs off (an active learned item, or feedback) and whose text no new file has goes to the new
  file (one the text rule leaves) whose text is most like its own: at least ``EDITED_MIN`` of their
  three-word sequences shared (Jaccard, bodies without front matter), the most alike pairs first
  (:meth:`Renames.plan_edited`). It is reported with its ``similarity``. A document nothing hangs off is a
  removal and an addition, as before; so are all of them when more than ``EDITED_MAX`` vanished documents
  or new files are in one sync. The cut is high because notes written from one template share much of
  their text: a new note made from a removed one's template can still be taken for it (``renames`` says so).
- Order: changed paths choose first, then new files, each in path order; among several documents of the
  same text, the one with the same file name first, else the first in path order. New files left over are
  added; vanished documents left over are removed.
- When stored files changed, sync first reads the text of every file it will read (to know where texts
  went) and moves the documents involving changed paths in one transaction before the batches (through
  temporary paths, so documents can swap paths); a new file taking a vanished document is moved in its
  batch. A file edited between that first read and its batch is stored as read in its batch.
- The renamed document is read from its new path: its title (when it comes from the file name), its
  default keywords file (``<new stem>.keywords.json``: moved along, it is used; left behind, it is an
  orphan and the document keeps no file keywords) and its full-text row are those of the new path. A
  keywords file given with ``add --keywords`` is not carried over.
- A vanished document is kept (not removed) for one sync when a new file of the same markdown size could
  not be read in this sync and was not reported by the previous one (it may be that document renamed, with
  a bad byte): fixed before the next sync, it pairs then. The sync after removes the document whatever, so
  a file that stays unreadable (NUL bytes of the same size, say) cannot keep a deleted document indexed.
  It is reported in ``warnings``.
- What stores the path instead of the id follows in the same transaction: feedback (``query_feedback``),
  the recorded results of queries (``query_attempts.top_results``) and the learned items' details.

Sync writes new files in batches and removes vanished ones after the last batch, so a vanished document is
never removed before the batch that could rename it (a sync killed in between renames the rest next time).
"""

from __future__ import annotations

import json
import re
from posixpath import basename
from typing import Any, Callable

from kb_indexer.index.markdown import parse_markdown
from kb_indexer.store import fulltext
from kb_indexer.store.connection import transaction
from kb_indexer.store.document_paths import follow_paths, move_document
from kb_indexer.store.documents import hanging_off
from kb_indexer.store.dbapi import Connection


EDITED_MIN = 0.7     # the share of three-word sequences two texts must have in common to be one document edited
EDITED_MAX = 2000    # vanished documents, and new files, beyond which a sync pairs no edited renames (pairs grow as
                     # their product)
SHINGLE_WORDS = 50_000   # the words of a text compared (its beginning): the renamed-and-edited check of a large
                         # note stays bounded
_WORD = re.compile(r"\w+")


class Renames:
    """The vanished documents a sync can rename, by text hash; ``take`` moves one to a new path."""

    def __init__(self, conn: Connection, vanished: set[str], new_files: bool):
        self.vanished = vanished
        self.by_text: dict[str, list[str]] = {}
        paths = sorted(vanished) if new_files else []
        if paths:
            rows = conn.execute("SELECT filepath, text_hash FROM documents WHERE text_hash IS NOT NULL AND filepath IN "
                                "(SELECT value FROM json_each(?)) ORDER BY filepath", (json.dumps(paths),))
            for path, text in rows:
                self.by_text.setdefault(text, []).append(path)
        self.done: list[dict[str, Any]] = []  # {"from", "to"} (and "similarity": edited) in the order renamed
        self._pending: list[tuple[str, str]] = []  # renamed in this batch, paths not yet followed
        self._planned: dict[str, str] | None = None  # after :meth:`plan`: {new file: vanished path}
        self._moved_in: set[str] = set()  # paths :meth:`plan` gave another document
        self._edited: dict[str, tuple[str, float]] = {}  # after :meth:`plan_edited`: {new file: (vanished, similarity)}

    def __bool__(self) -> bool:
        return bool(self.by_text) or bool(self._moved_in) or bool(self._edited)

    def take(self, conn: Connection, new_path: str, text_hash: str | None) -> bool:
        """Give ``new_path`` the document of a vanished file with this text (False: none); True also for a
        path :meth:`plan` already gave a document."""
        if new_path in self._moved_in:
            self._moved_in.discard(new_path)
            return True
        edited = self._edited.pop(new_path, None)
        if edited is not None:
            old: str | None = edited[0]
        elif self._planned is not None:
            old = self._planned.pop(new_path, None)
        else:
            candidates = self.by_text.get(text_hash or "")
            old = _pick(candidates, new_path) if candidates else None
        if old is None:
            return False
        move_document(conn, old, new_path)
        self.done.append({"from": old, "to": new_path, **({"similarity": edited[1]} if edited else {})})
        self._pending.append((old, new_path))
        return True

    def plan(self, conn: Connection, existing: dict[str, tuple[Any, ...]], todo: list[str],
             text_of: Callable[[str], str | None], markdown_of: Callable[[str], str | None]
             ) -> tuple[dict[str, tuple[Any, ...]], int]:
        """Pair the texts that moved when stored documents' files changed (see the module's rules), and move
        the documents involved at once, in one transaction. Returns ``existing`` as the batches must see it
        (a path that got another document, or lost its own, is read as a new file) and the number of
        documents removed because another one took their path. ``text_of``: a file's text hash; ``markdown_of``:
        its markdown text."""
        old = {rel: existing[rel][3] for rel in todo if rel in existing and existing[rel][3]}
        if not old:
            return existing, 0
        new = {rel: text_of(rel) for rel in todo}
        pool = {text: list(paths) for text, paths in self.by_text.items()}
        changed = sorted(rel for rel, text in old.items() if new[rel] and new[rel] != text)
        for rel in changed:
            pool.setdefault(old[rel], []).append(rel)
        pairs: dict[str, str] = {}
        for rel in changed + [rel for rel in todo if rel not in existing and new[rel]]:
            candidates = sorted(p for p in pool.get(new[rel] or "", []) if p != rel)
            if candidates:
                pairs[rel] = _pick(candidates, rel)
                pool[new[rel] or ""].remove(pairs[rel])
        _keep_edited_in_place(conn, pairs, set(changed), markdown_of)
        now = {new_path: src for new_path, src in pairs.items() if new_path in existing or src not in self.vanished}
        self._planned = {new_path: src for new_path, src in pairs.items() if new_path not in now}
        displaced = sorted(set(now) & set(existing) - set(now.values()))  # documents whose path another took
        if now:
            with transaction(conn):
                _permute(conn, now, displaced)
            self.done += [{"from": now[p], "to": p} for p in sorted(now)]
            self._moved_in = set(now)
        left = set(now) | set(now.values())
        return {rel: row for rel, row in existing.items() if rel not in left}, len(displaced)

    def plan_edited(self, conn: Connection, new_files: list[str], hash_of: Callable[[str], str | None],
                    text_of: Callable[[str], str | None]) -> None:
        """Pair renames with edits (see the module's rules): ``new_files`` are the files the batches will read
        as new, ``hash_of`` and ``text_of`` their text hash and markdown text (None: unreadable). Call after
        :meth:`plan`; :meth:`take` then moves each paired document in its batch."""
        used = {d["from"] for d in self.done} | set((self._planned or {}).values())
        vanished = sorted(self.vanished - used)
        if not vanished or not new_files or len(vanished) > EDITED_MAX or len(new_files) > EDITED_MAX:
            return
        learned = hanging_off(conn, vanished)   # first: most syncs stop here, reading nothing more
        if not learned:
            return
        hashes = {rel: hash_of(rel) for rel in new_files}
        found = set(hashes.values())
        # a document whose text a new file has is the text rule's
        olds = {path: doc_id for path, (doc_id, text, _, _) in learned.items() if text not in found}
        pending = set(self._planned or {}) | self._moved_in   # files plan() gave a document already
        news = [rel for rel in new_files if hashes[rel] is not None and rel not in pending
                and (self._planned is not None or hashes[rel] not in self.by_text)]
        if olds and news:
            self._pair_edited(conn, olds, news, text_of)

    def _pair_edited(self, conn: Connection, olds: dict[str, int], news: list[str],
                     text_of: Callable[[str], str | None]) -> None:
        """The most alike pairs first (Jaccard of three-word sequences >= ``EDITED_MIN``), each side once; the
        shared sequences are counted through an index of the old texts' (no pair without one in common)."""
        bodies = fulltext.bodies(conn, list(olds.values()))
        sizes: dict[str, int] = {}
        index: dict[int, list[str]] = {}
        for path, doc_id in olds.items():
            words = _shingles(bodies.get(doc_id, ""))
            sizes[path] = len(words)
            for w in words:
                index.setdefault(w, []).append(path)
        scored = []
        for rel in news:
            words = _file_shingles(text_of, rel)
            shared: dict[str, int] = {}
            for w in words:
                for path in index.get(w, ()):
                    shared[path] = shared.get(path, 0) + 1
            for path, n in shared.items():
                sim = n / (len(words) + sizes[path] - n)
                if sim >= EDITED_MIN:
                    scored.append((-sim, rel, path))
        taken: set[str] = set()
        for neg, rel, path in sorted(scored):
            if rel not in self._edited and path not in taken:
                self._edited[rel] = (path, round(-neg, 3))
                taken.add(path)

    def settle(self, existing: dict[str, tuple[Any, ...]], on_disk: dict[str, str], rejected: dict[str, str],
               rejected_before: dict[str, str], stats: dict[str, Any]) -> set[str]:
        """After the last batch: the vanished paths sync must not remove (renamed, or held back; see
        :func:`held_back`), with ``renames`` and the warnings in ``stats``."""
        moved = {r["from"] for r in self.done}
        kept = held_back(self.vanished - moved, existing, on_disk,
                         {rel: sig for rel, sig in rejected.items() if rel not in rejected_before})
        stats["renames"] = self.done
        stats["warnings"] += [{"file": old, "message": f"{old} is gone but its document is kept: {new} could not "
                               "be read and may be it renamed (fix it and sync again)"} for old, new in kept.items()]
        return moved | set(kept)

    def follow(self, conn: Connection) -> None:
        """Move what stores the renamed documents' paths (call in the transaction that renamed them)."""
        if self._pending:
            follow_paths(conn, dict(self._pending))
            self._pending.clear()


def _shingles(text: str) -> set[int]:
    """The text's three-word sequences (lower case; a text of one or two words: that one sequence), as hashes
    (a tuple of three words costs ~200 bytes: a 4 MB note held 400 MB), of its first ``SHINGLE_WORDS`` words."""
    words = _WORD.findall(text[:SHINGLE_WORDS * 16].lower())[:SHINGLE_WORDS]
    return {hash(tuple(words[i:i + 3])) for i in range(max(1, len(words) - 2))} if words else set()


def _keep_edited_in_place(conn: Connection, pairs: dict[str, str], changed: set[str],
                          text_of: Callable[[str], str | None]) -> None:
    """Drop the pairs that would take a document from a file still there (a changed path) which takes no other
    document itself and still holds most of its old text (``EDITED_MIN`` of its three-word sequences): ``cp
    a.md copy.md`` then an edit of a.md keeps a's document (and what was learned about it) at a.md, and a
    planted copy of a note's old text cannot take it from a note being edited. A note replaced by another
    text (``mv a.md z.md`` and a new a.md) still goes with its text; so do moves and swaps, where the changed
    path takes another document. Repeated, as a dropped pair can leave its taker taking nothing."""
    kept: dict[str, bool] = {}

    def still_there(src: str) -> bool:   # each file read once, however many passes
        if src not in kept:
            kept[src] = _still_there(conn, src, text_of)
        return kept[src]

    while True:
        drop = [taker for taker, src in pairs.items() if src in changed and src not in pairs and still_there(src)]
        if not drop:
            return
        for taker in drop:
            del pairs[taker]


def _still_there(conn: Connection, path: str, text_of: Callable[[str], str | None]) -> bool:
    """Whether the file at ``path`` still holds ``EDITED_MIN`` of its stored document's three-word sequences."""
    row = conn.execute("SELECT id FROM documents WHERE filepath = ?", (path,)).fetchone()
    old = _shingles(fulltext.bodies(conn, [row[0]]).get(row[0], "")) if row else set()
    return bool(old) and len(old & _file_shingles(text_of, path)) >= EDITED_MIN * len(old)


def _file_shingles(text_of: Callable[[str], str | None], rel: str) -> set[int]:
    """The three-word sequences of a file's body (its markdown without front matter), as stored bodies are."""
    return _shingles(parse_markdown(text_of(rel) or "").body)


def _pick(candidates: list[str], new_path: str) -> str:
    """The vanished document with the same file name as ``new_path``, else the first in path order."""
    name = basename(new_path)
    old = next((p for p in candidates if basename(p) == name), candidates[0])
    candidates.remove(old)
    return old


def _permute(conn: Connection, moves: dict[str, str], displaced: list[str]) -> None:
    """``moves``: {new path: old path}. Through temporary paths (no stored path starts with ``/``), so
    documents can swap paths under UNIQUE(filepath); the documents at ``displaced`` are deleted."""
    temp = {old: f"/kbindex-renaming/{n}" for n, old in enumerate(sorted(moves.values()))}
    for old, tmp in temp.items():
        move_document(conn, old, tmp)
    follow_paths(conn, temp)
    for path in displaced:
        conn.execute("DELETE FROM documents WHERE filepath = ?", (path,))
    final = {temp[old]: new for new, old in moves.items()}
    for tmp, new in final.items():
        move_document(conn, tmp, new)
        # Read again from the new path by the next sync should this one be killed before its batch (a moved
        # file keeps its stat signature); a keywords file given with ``add --keywords`` is not carried over.
        conn.execute("UPDATE documents SET stat_sig = NULL, content_hash = NULL, keywords_file = NULL "
                     "WHERE filepath = ?", (new,))
    follow_paths(conn, final)


def held_back(missing: set[str], existing: dict[str, tuple[Any, ...]], on_disk: dict[str, str],
              rejected: dict[str, str]) -> dict[str, str]:
    """``{vanished path: new path}``: vanished documents to keep because a new file of the same markdown
    size (``existing``: path -> (content hash, stat signature, ...); signatures: ``mtime:size[|...]``)
    could not be read in this sync, and may be that document renamed. ``rejected``: the files this sync
    could not read and the previous one could (held back once: the next sync removes the document)."""
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
