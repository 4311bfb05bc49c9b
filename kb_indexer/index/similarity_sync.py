"""similarities.json files: importing them, and which file lists which relation.

A project can hold two such files (beside the KB root and inside it). The
table ``similarity_files`` keeps, per relation, every file that lists it;
``keyword_similarities.origin_kind`` only says who last wrote the relation's
values (``file`` with ``origin_file``, ``person`` for ``relate``, ``import``
for ``import-similarities``, ``learned``; kb_indexer.store.provenance). A
file's path is kept relative to the KB root's parent.

- Re-importing a changed file applies only the entries that changed since its
  last import (``similarity_file_entries``): a relation whose entry is unchanged
  keeps what a person (``relate``, ``unrelate``) or learning did to it since.
  Changed entries update their relations in place (their ids, kept in query
  history and learned items, stay valid); relations it no longer lists are
  forgotten.
- A relation no file lists any more is deleted, unless its values were last
  written by a person or by learning (``origin_kind`` not ``file``).
- A relation a person deleted (``unrelate``, a tombstone) is not created again
  by re-reading a file, not even a restored or edited one; ``relate`` or
  ``import-similarities`` lifts the tombstone.
- When another file still lists it, that file's entry is applied again (the
  dropped file's values must not linger) and becomes the origin.
- A file that disappeared is handled as if it listed nothing, at the next full
  sync.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_indexer.errors import KbError
from kb_indexer.index.files import load_json_file, validate_similarities_data
from kb_indexer.index.paths import sig_of
from kb_indexer.store import meta
from kb_indexer.store.connection import savepoint, transaction
from kb_indexer.store.documents import KeywordIds
from kb_indexer.store.provenance import is_tombstoned, lift, origin_text
from kb_indexer.store.similarities import relation_keys, upsert_similarity
from kb_indexer.text import normalize_keyword
from kb_indexer.store.dbapi import Connection, Row

if TYPE_CHECKING:   # hashlib is imported when a digest is needed (see _sha1)
    from _hashlib import HASH

SIMILARITY_FILENAME = "similarities.json"
HASH_KEY = "similarities_hash:"
REJECTED_KEY = "similarities_rejected:"   # digest of a file the last sync could not import
SEEN_KEY = "similarities_seen:"   # "{mtime_ns}:{size} {digest}" of a file when sync last read it


def _places(kb_root: Path) -> tuple[Path, Path]:
    """Where a knowledge base's similarities files are: at the project root (beside the KB) and inside the KB root."""
    return kb_root.parent / SIMILARITY_FILENAME, kb_root / SIMILARITY_FILENAME


def similarity_files(kb_root: Path) -> list[Path]:
    """The similarities files there are (:func:`_places`)."""
    out: list[Path] = []
    for cand in _places(kb_root):
        if cand.is_file() and cand.resolve() not in [p.resolve() for p in out]:
            out.append(cand)
    return out


def file_key(root: Path, path: Path) -> str:
    """A similarities file as named in ``origin_file`` and ``similarity_files.file``."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(root.resolve().parent).as_posix()
    except ValueError:  # a symlink leading elsewhere
        return str(resolved)


def _sha1(data: bytes) -> HASH:
    """hashlib's sha1, imported when a digest is needed: a query's stale check of an unchanged similarities
    file needs none (hashlib loads OpenSSL)."""
    import hashlib  # lazy: hashlib (OpenSSL), only when a similarities file is read

    return hashlib.sha1(data)


def hash_key(path: Path) -> str:
    return HASH_KEY + str(path.resolve())


def _entry_key(keyword1: str, keyword2: str, sim_type: str) -> tuple[Any, ...]:
    return tuple(sorted((normalize_keyword(keyword1), normalize_keyword(keyword2)))), sim_type


def _entry_id(e: dict[str, Any]) -> str:
    (a, b), t = _entry_key(e["keyword1"], e["keyword2"], e["type"])
    return f"{a}|{b}|{t}"


def _entry_hash(e: dict[str, Any]) -> str:
    values = [normalize_keyword(e["keyword1"]), normalize_keyword(e["keyword2"]), e["type"], e["context"].strip(),
              float(e["score"]), bool(e["directional"])]
    return _sha1(json.dumps(values).encode()).hexdigest()


def _relation_id(conn: Connection, ids: KeywordIds, e: dict[str, Any]) -> int | None:
    a, b = ids.get(e["keyword1"]), ids.get(e["keyword2"])
    if a is None or b is None:
        return None
    row = conn.execute("SELECT id FROM keyword_similarities WHERE keyword_id_1 = ? AND keyword_id_2 = ? AND "
                       "similarity_type = ?", (min(a, b), max(a, b), e["type"])).fetchone()
    return row[0] if row else None


class _Listings:
    """Entries of the other similarities files, read once per sync when a relation is handed over."""

    def __init__(self, root: Path | None):
        self.root = root
        self._cache: dict[str, dict[tuple[Any, ...], dict[str, Any]] | None] = {}

    def entry(self, key: str, rel: Row) -> dict[str, Any] | None:
        if self.root is None:
            return None
        if key not in self._cache:
            try:
                path = self.root.parent / key
                data, _ = load_json_file(path)
                entries = validate_similarities_data(data, str(path))
                self._cache[key] = {_entry_key(e["keyword1"], e["keyword2"], e["type"]): e for e in entries}
            except KbError:
                self._cache[key] = None
        cached = self._cache[key]
        return None if cached is None else cached.get((tuple(sorted((rel["k1"], rel["k2"]))), rel["similarity_type"]))


def _unlist(conn: Connection, ids: KeywordIds, key: str, sids: set[int], listings: _Listings) -> int:
    """File ``key`` no longer lists the relations ``sids``; returns how many relations were deleted."""
    removed = 0
    for sid in sorted(sids):
        conn.execute("DELETE FROM similarity_files WHERE similarity_id = ? AND file = ?", (sid, key))
        rel = conn.execute(
            "SELECT s.id, s.origin_kind, s.origin_file, s.similarity_type, k1.keyword AS k1, k2.keyword AS k2 FROM keyword_similarities s "
            "JOIN keywords k1 ON k1.id = s.keyword_id_1 JOIN keywords k2 ON k2.id = s.keyword_id_2 WHERE s.id = ?",
            (sid,)).fetchone()
        if rel is None or rel["origin_kind"] != "file":
            continue  # gone already, or last written by a person or by learning: it stays
        others = [r[0] for r in conn.execute(
            "SELECT file FROM similarity_files WHERE similarity_id = ? ORDER BY file", (sid,))]
        if not others:
            conn.execute("DELETE FROM keyword_similarities WHERE id = ?", (sid,))
            removed += 1
            continue
        if rel["origin_file"] != key:
            continue  # its values came from a file that still lists it
        for other in others:  # hand it over: the values of a file that still lists it
            e = listings.entry(other, rel)
            if e is not None:
                upsert_similarity(conn, ids, e["keyword1"], e["keyword2"], e["type"], e["context"], e["score"],
                                  e["directional"], "file", other)
                break
        else:
            conn.execute("UPDATE keyword_similarities SET origin = ?, origin_file = ? WHERE id = ?",
                         (origin_text("file", others[0]), others[0], sid))
    return removed


def import_similarities(conn: Connection, path: Path, *, file: str | None = None,
                        root: Path | None = None) -> dict[str, Any]:
    """Import a similarities file in one transaction (all entries valid, or nothing).

    Without ``file`` it is a person's ``import-similarities`` (origin ``import``; lifts tombstones).
    With ``file`` (sync; the file's key) the file's listing is recorded and the relations it no longer
    lists are forgotten (see the module docstring); ``root`` (the KB root) lets a relation still listed
    by the other file take that file's values.
    """
    data, _ = load_json_file(path)
    entries = validate_similarities_data(data, str(path))
    created = updated = removed = 0
    key = file
    unchanged = buried = 0
    with transaction(conn):
        ids = KeywordIds(conn)
        keep = set()
        before = {} if key is None else dict(conn.execute(
            "SELECT entry, entry_hash FROM similarity_file_entries WHERE file = ?", (key,)).fetchall())
        marks = [] if key is None else [(_entry_id(e), _entry_hash(e)) for e in entries]   # once per entry
        for i, e in enumerate(entries):
            if before and before.get(marks[i][0]) == marks[i][1]:
                # Unchanged since this file was last imported: what a person or learning did to the
                # relation since (relate, unrelate, score changes) stays.
                unchanged += 1
                sid = _relation_id(conn, ids, e)
                if sid is not None:
                    keep.add(sid)
                continue
            rk = relation_keys(conn, ids, e["keyword1"], e["keyword2"], e["type"])
            if rk is not None and key is not None and is_tombstoned(conn, *rk):
                buried += 1  # a person deleted it: the file does not bring it back
                continue
            if rk is not None and key is None:
                lift(conn, *rk)
            sid, new = upsert_similarity(conn, ids, e["keyword1"], e["keyword2"], e["type"], e["context"],
                                         e["score"], e["directional"], "import" if key is None else "file", key)
            keep.add(sid)
            created += new
            updated += not new
            if key is not None:
                conn.execute("INSERT OR IGNORE INTO similarity_files (similarity_id, file) VALUES (?, ?)", (sid, key))
        if key is not None:
            removed = _unlist(conn, ids, key, _listed_by(conn, key) - keep, _Listings(root))
            _remember_entries(conn, key, marks)
    out = {"file": str(path), "imported": len(entries), "created": created, "updated": updated}
    if key is not None:
        out["unchanged"] = unchanged
        out["deleted_by_a_person"] = buried
        out["removed"] = removed
    return out


def _remember_entries(conn: Connection, key: str, marks: list[tuple[str, str]]) -> None:
    """Record the file's entries as ``(entry id, entry hash)`` pairs."""
    conn.execute("DELETE FROM similarity_file_entries WHERE file = ?", (key,))
    conn.executemany("INSERT INTO similarity_file_entries (file, entry, entry_hash) VALUES (?, ?, ?) "
                     "ON CONFLICT (file, entry) DO UPDATE SET entry_hash = excluded.entry_hash",
                     [(key, entry, digest) for entry, digest in marks])


def adopt_unchanged_files(conn: Connection, root: Path) -> list[str]:
    """After ``import`` of an export: similarities files whose entries are exactly those the imported
    index recorded count as synced (no stale warning, nothing re-applied). Returns their paths."""
    adopted = []
    for path in similarity_files(root):
        key = file_key(root, path)
        try:
            raw = path.read_bytes()
            data, _ = load_json_file(path)
            entries = validate_similarities_data(data, str(path))
        except (KbError, OSError):
            continue
        recorded = dict(conn.execute("SELECT entry, entry_hash FROM similarity_file_entries WHERE file = ?",
                                     (key,)).fetchall())
        if recorded and recorded == {_entry_id(e): _entry_hash(e) for e in entries}:
            meta.put(conn, hash_key(path), _sha1(raw).hexdigest())
            adopted.append(str(path))
    return adopted


#: The relations a file (``?``, twice) listed at its last import (``origin_file`` covers indexes older than the table).
_LISTED_BY = ("SELECT similarity_id FROM similarity_files WHERE file = ? UNION "
              "SELECT id FROM keyword_similarities WHERE origin_kind = 'file' AND origin_file = ?")


def _listed_by(conn: Connection, key: str) -> set[int]:
    """Relations file ``key`` listed at its last import."""
    return {r[0] for r in conn.execute(_LISTED_BY, (key, key))}


def _recorded_files(conn: Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT DISTINCT file FROM similarity_file_entries")}


def known_files(conn: Connection) -> set[str]:
    """Every similarities file the index has relations from."""
    return {r[0] for r in conn.execute(
        "SELECT file FROM similarity_files UNION "
        "SELECT origin_file FROM keyword_similarities WHERE origin_kind = 'file'")}


def sync_similarities(conn: Connection, root: Path, errors: list[Any], warnings: list[Any],
                      force: bool) -> dict[str, Any]:
    """Import changed similarities files, forget deleted ones (inside the caller's transaction). Without
    ``force``, a deleted file that listed relations only it lists is kept, with a warning (see :func:`_forget`)."""
    out = {"files": 0, "imported": 0, "unchanged_files": 0, "removed": 0}
    current = similarity_files(root)
    hashes = set()
    for path in current:
        key = hash_key(path)
        hashes.add(key)
        digest = None
        try:
            sig = sig_of(path.stat())
            digest = _sha1(path.read_bytes()).hexdigest()
            _remember_seen(conn, path, sig, digest)
            if meta.get(conn, key) == digest:
                out["unchanged_files"] += 1
                continue
            with savepoint(conn):
                res = import_similarities(conn, path, file=file_key(root, path), root=root)
                meta.put(conn, key, digest)
            out["files"] += 1
            out["imported"] += res["imported"]
            out["removed"] += res["removed"]
            meta.delete(conn, REJECTED_KEY + str(path.resolve()))
        except (KbError, OSError) as exc:
            message = exc.message if isinstance(exc, KbError) else f"cannot read: {exc.strerror or exc}"
            errors.append({"file": file_key(root, path), "message": message})   # as it is recorded
            if digest is not None:  # the stale check does not report it again until it changes
                meta.put(conn, REJECTED_KEY + str(path.resolve()), digest)
    present = {file_key(root, p) for p in current}
    own_keys = {file_key(root, p) for p in _places(root)}
    for key in sorted((known_files(conn) | _recorded_files(conn)) - present):
        if key not in own_keys:   # another checkout's file (or this one's before a move): `--force` forgets it
            if force:
                _forget(conn, root, key, True, out, warnings)
        elif not _forget(conn, root, key, force, out, warnings):
            hashes.add(hash_key(root.parent / key))   # still reported by the stale check until forgotten
    kept = hashes | {prefix + k[len(HASH_KEY):] for k in hashes for prefix in (REJECTED_KEY, SEEN_KEY)}
    own_paths = _own_paths(root)   # another checkout's records (a team member's sync from elsewhere) are theirs
    meta.delete(conn, *(key for key in meta.with_prefixes(conn, HASH_KEY, REJECTED_KEY, SEEN_KEY)
                        if key not in kept and key.split(":", 1)[1] in own_paths))
    return out


def _own_paths(root: Path) -> set[str]:
    """Where this root's similarities files are (:func:`_places`), as the meta keys name them."""
    return {str(p.resolve()) for p in _places(root)}


def _forget(conn: Connection, root: Path, key: str, force: bool, out: dict[str, Any], warnings: list[Any]) -> bool:
    """A similarities file that is gone: the relations only it listed are removed (a person's or learning's stay,
    see :func:`_unlist`). Not without ``force`` when there are any: a clone or checkout without the file (a
    team member's, a branch) would take them away for everyone, with the score changes learned on them; they
    are kept and a warning says so. Returns whether the file was forgotten."""
    if not force:
        only_here = conn.execute(   # one statement (on PostgreSQL, one round trip whatever the file's size)
            f"SELECT count(*) FROM keyword_similarities s WHERE s.origin_kind = 'file' AND s.id IN ({_LISTED_BY}) "
            "AND NOT EXISTS (SELECT 1 FROM similarity_files f WHERE f.similarity_id = s.id AND f.file != ?)",
            (key, key, key)).fetchone()[0]
        if only_here:
            warnings.append({"file": key, "message": (
                f"{key} is gone: the {only_here} relations only it lists are kept (a checkout without it?). "
                "If it was deleted on purpose: kbindex sync --force")})
            return False
    out["removed"] += _unlist(conn, KeywordIds(conn), key, _listed_by(conn, key), _Listings(root))
    # A forgotten file's entry records go with it: restored later, every entry is applied again.
    conn.execute("DELETE FROM similarity_file_entries WHERE file = ?", (key,))
    return True


def _remember_seen(conn: Connection, path: Path, sig: str, digest: str) -> None:
    key, value = SEEN_KEY + str(path.resolve()), f"{sig} {digest}"
    if meta.get(conn, key) != value:
        meta.put(conn, key, value)


def _digest_for_check(path: Path, seen: str | None) -> str:
    """The file's digest; from what sync recorded when its size and modification time are unchanged (the
    stale check runs before every query: a large similarities file is not read again each time)."""
    sig = sig_of(path.stat())
    if seen and seen.split(" ", 1)[0] == sig:
        return seen.split(" ", 1)[1]
    return _sha1(path.read_bytes()).hexdigest()


def similarities_changed(conn: Connection, root: Path) -> list[str]:
    """Similarities files a full sync would import (new or changed) or forget (deleted)."""
    out = []
    current = similarity_files(root)
    stored = meta.with_prefixes(conn, HASH_KEY, REJECTED_KEY, SEEN_KEY)
    for path in current:
        key = hash_key(path)
        try:
            digest = _digest_for_check(path, stored.get(SEEN_KEY + str(path.resolve())))
        except OSError:
            continue
        if digest not in (stored.get(key), stored.get(REJECTED_KEY + str(path.resolve()))):
            out.append(str(path))
    keys, own = {hash_key(p) for p in current}, _own_paths(root)
    out += sorted(k[len(HASH_KEY):] + " (deleted)" for k in stored
                  if k.startswith(HASH_KEY) and k not in keys and k[len(HASH_KEY):] in own)
    return out
