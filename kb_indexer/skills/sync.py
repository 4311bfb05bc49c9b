"""`skills sync`: index Agent Skills folders (``<dir>/<name>/SKILL.md``) into the ``skills`` table.

The directories synced (:mod:`kb_indexer.skills.dirs`, all resolved; a remembered one swapped for a
symlink since is reported, not followed) are those remembered (given before), those given now (then
remembered) and those of ``KBINDEX_SKILLS`` (never remembered); ``forget`` removes
remembered ones. Every folder's SKILL.md is checked (a regular file inside its directory, at most 1 MB:
stat first), read and hashed first; then one transaction writes what changed: new and changed skills (by
content hash), and drops skills whose folder is gone, whose SKILL.md became invalid, or whose directory is
no longer synced at all (forgotten, or only in ``KBINDEX_SKILLS`` and no longer there); a dropped skill
leaves every session too. Nothing is refused silently: an invalid file, a SKILL.md that is a FIFO, a
directory or a dangling symlink, one reached by a symlink leading outside its directory, a duplicate name
and a missing directory are each reported (``errors``, ``duplicates``). A remembered directory that is
missing keeps its skills (an unmounted disk does not wipe them). Of two folders with one name, the copy
indexed now stays while it is present and valid; else the first in the directories' order wins.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_indexer.errors import NotFoundError, ValidationError
from kb_indexer.skills.dirs import SyncDirs, env_dirs, resolve_dirs, store_dirs, stored
from kb_indexer.index.membership import mode_problem
from kb_indexer.index.paths import is_inside
from kb_indexer.skills.parse import MAX_SKILL_BYTES, ParsedSkill, SkillParseError, content_hash, parse_skill
from kb_indexer.skills.terms import VERSION, tokens
from kb_indexer.store import meta
from kb_indexer.store.connection import transaction
from kb_indexer.store.dbapi import Connection, Row

SKILLS_VERSION_KEY = "skills_version"  # in the meta table: bumped when the skill set changes
VECTORS_KEY = "skills_vectors"   # in the meta table: the skills' vectors (kb_indexer.skills.vectors)

SKILL_FILE = "SKILL.md"
MAX_BODY_TOKENS = 4_000   # body tokens kept for matching (the body itself is stored whole)


@dataclass
class Found:
    folder: str          # absolute path of the skill's folder
    source_dir: str      # the skills directory it was found in
    digest: str
    skill: ParsedSkill | None   # None: unchanged since the last sync (not parsed again)


def skill_terms(name: str, description: str, body: str) -> str:
    """The stored matcher tokens of a skill (JSON)."""
    return json.dumps({"v": VERSION, "name": tokens(name), "description": tokens(description),
                       "body": tokens(body)[:MAX_BODY_TOKENS]}, ensure_ascii=False, separators=(",", ":"))


class SkillFileRefused(Exception):
    """A SKILL.md that is not read; ``str()`` says why."""


def read_opened(fd: int, checked: os.stat_result | None = None) -> bytes:
    """The bytes of the opened SKILL.md ``fd`` (closed here): a regular file (the same one as ``checked``
    when given), of at most ``MAX_SKILL_BYTES`` (only that much plus one byte is read);
    :class:`SkillFileRefused`. The one rule for ``skills sync`` and for MCP's ``skill://`` reads."""
    try:
        with os.fdopen(fd, "rb") as fh:
            opened = os.fstat(fh.fileno())
            if mode_problem(opened.st_mode):
                raise SkillFileRefused(mode_problem(opened.st_mode))
            if checked is not None and (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
                raise SkillFileRefused("replaced while it was read (not the file checked)")
            if opened.st_size > MAX_SKILL_BYTES:
                raise SkillFileRefused(f"larger than {MAX_SKILL_BYTES} bytes ({opened.st_size})")
            data = fh.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise SkillFileRefused(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_SKILL_BYTES:
        raise SkillFileRefused(f"larger than {MAX_SKILL_BYTES} bytes")
    return data


def read_skill_file(file: Path, root: Path) -> bytes:
    """A SKILL.md's bytes, checked before it is opened: inside ``root``, a regular file (a FIFO is never
    opened), at most ``MAX_SKILL_BYTES``; then :func:`read_opened`. :class:`SkillFileRefused`."""
    if file.is_symlink() and not file.exists():
        raise SkillFileRefused(f"a dangling symlink (to {os.readlink(file)})")
    real = file.resolve()
    if not is_inside(root, real):
        raise SkillFileRefused(f"leads outside the skills directory {root} (to {real})")
    try:
        st = real.stat()
        if mode_problem(st.st_mode):
            raise SkillFileRefused(mode_problem(st.st_mode))
        if st.st_size > MAX_SKILL_BYTES:
            raise SkillFileRefused(f"larger than {MAX_SKILL_BYTES} bytes ({st.st_size})")
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise SkillFileRefused(f"cannot read: {exc.strerror or exc}") from None
    return read_opened(fd, st)


def scan_dir(directory: str, known: dict[str, str], errors: list[dict[str, Any]]) -> list[Found]:
    """Every ``<directory>/<name>/SKILL.md``: hashed, parsed when its hash differs from ``known``."""
    root = Path(directory).resolve()
    out: list[Found] = []
    try:
        children = sorted(Path(directory).iterdir(), key=lambda p: p.name)
    except OSError as exc:
        errors.append({"file": directory, "message": f"cannot list the directory: {exc.strerror or exc}"})
        return out
    for child in children:
        file = child / SKILL_FILE
        if not child.is_dir() or not (file.is_symlink() or file.exists()):
            continue   # not a skill folder
        try:
            data = read_skill_file(file, root)
        except SkillFileRefused as exc:
            errors.append({"file": str(file), "message": f"{exc}; skipped"})
            continue
        folder = str(child.absolute())
        digest = content_hash(data)
        if known.get(folder) == digest:
            out.append(Found(folder, directory, digest, None))
            continue
        try:
            out.append(Found(folder, directory, digest, parse_skill(data)))
        except SkillParseError as exc:
            errors.append({"file": str(file), "message": str(exc)})
    return out


def _write(conn: Connection, f: Found) -> None:
    s = f.skill
    assert s is not None
    conn.execute(
        "INSERT INTO skills (name, description, metadata, body, folder, source_dir, content_hash, terms) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET description = excluded.description, "
        "metadata = excluded.metadata, body = excluded.body, folder = excluded.folder, "
        "source_dir = excluded.source_dir, content_hash = excluded.content_hash, terms = excluded.terms, "
        "updated_at = strftime('%Y-%m-%dT%H:%M:%S', 'now')",
        (s.name, s.description, json.dumps(s.metadata, ensure_ascii=False), s.body, f.folder, f.source_dir,
         f.digest, skill_terms(s.name, s.description, s.body)))


def _rows(conn: Connection) -> list[dict[str, Any]]:
    """The indexed skills with their paths resolved (rows of older versions may hold ``a/../a``)."""
    dirs: dict[str, str] = {}
    out = []
    for r in conn.execute("SELECT name, folder, source_dir, content_hash FROM skills ORDER BY id"):
        src = dirs.setdefault(r["source_dir"], stored(r["source_dir"]))
        out.append({"name": r["name"], "folder": os.path.join(src, os.path.basename(r["folder"])),
                    "source_dir": src, "content_hash": r["content_hash"], "stored": (r["folder"], r["source_dir"])})
    return out


def _scan(dirs: SyncDirs, known: dict[str, str], errors: list[dict[str, Any]]) -> list[Found]:
    found: list[Found] = []
    moved = dirs.moved
    for d in dirs.ordered:
        if d in moved:
            errors.append({"file": d, "message": f"the remembered skills directory leads elsewhere now (to "
                           f"{os.path.realpath(d)}): not followed, its skills are kept; give the real directory "
                           "(`kbindex skills sync DIR`) or forget this one (`--forget`)"})
            continue
        if not Path(d).is_dir():
            errors.append({"file": d, "message": "skills directory not found; its skills are kept"})
            continue
        found.extend(scan_dir(d, known, errors))
    return found


def _plan(conn: Connection, dirs: SyncDirs,
          errors: list[dict[str, Any]]) -> tuple[list[Found], list[Found], list[dict[str, Any]]]:
    """(found skills, those to write, duplicates). Of two folders with one name, the one indexed now
    wins while it is present and valid; else the first in the directories' order (see ``dirs``)."""
    rows = _rows(conn)
    found = _scan(dirs, {r["folder"]: r["content_hash"] for r in rows}, errors)
    name_of = {r["folder"]: r["name"] for r in rows}
    found_name = {f.folder: f.skill.name if f.skill else name_of[f.folder] for f in found}
    listed, scanned = set(dirs.ordered), set(dirs.scanned)
    owner: dict[str, str] = {}
    for r in rows:   # kept copies: in a listed directory not scanned now, or found again with the same name
        if r["source_dir"] in listed and (r["source_dir"] not in scanned or found_name.get(r["folder"]) == r["name"]):
            owner[r["name"]] = r["folder"]
    keep, write, dups = [], [], []
    for f in found:
        name = found_name[f.folder]
        if owner.setdefault(name, f.folder) != f.folder:
            dups.append({"name": name, "kept": owner[name], "skipped": f.folder})
            continue
        keep.append(f)
        if f.skill is not None:
            write.append(f)
    return keep, write, dups


def sync_skills(conn: Connection, given: list[str] | None = None,
                forget: list[str] | None = None) -> dict[str, Any]:
    dirs = resolve_dirs(conn, list(given or []), list(forget or []))
    errors: list[dict[str, Any]] = []
    keep, write, dups = _plan(conn, dirs, errors)
    for d in dups:
        errors.append({"file": str(Path(d["skipped"]) / SKILL_FILE),
                       "message": f"duplicate skill name {d['name']!r} (already indexed from {d['kept']}); skipped"})
    listed, scanned = set(dirs.ordered), set(dirs.scanned)
    kept_folders = {f.folder for f in keep}
    with transaction(conn):
        store_dirs(conn, dirs)
        existing = _rows(conn)
        conn.executemany("UPDATE skills SET folder = ?, source_dir = ? WHERE name = ?",
                         [(r["folder"], r["source_dir"], r["name"]) for r in existing
                          if r["stored"] != (r["folder"], r["source_dir"])])
        by_folder = {r["folder"]: r for r in existing}
        gone = {r["name"] for r in existing if r["source_dir"] not in listed   # forgotten, or from KBINDEX_SKILLS
                or (r["source_dir"] in scanned and r["folder"] not in kept_folders)}
        renamed = {by_folder[f.folder]["name"] for f in write if f.skill is not None
                   and f.folder in by_folder and by_folder[f.folder]["name"] != f.skill.name}
        counts = _apply(conn, existing, gone | renamed, write)
        _refresh_terms(conn)
    return {"dirs": dirs.ordered, "forgotten": dirs.forget, **counts, "unchanged": len(keep) - len(write),
            "skills": _count(conn), "duplicates": dups, "errors": errors}


def _stale_terms(terms: str) -> bool:
    """Whether stored tokens are not this tokenizer version's (or not readable)."""
    try:
        return bool(json.loads(terms).get("v") != VERSION)
    except (ValueError, AttributeError):
        return True


def _refresh_terms(conn: Connection) -> None:
    """Tokens stored by another tokenizer version are computed again (else every match would redo them)."""
    stale = [r for r in conn.execute("SELECT name, description, body, terms FROM skills") if _stale_terms(r[3])]
    conn.executemany("UPDATE skills SET terms = ? WHERE name = ?",
                     [(skill_terms(r[0], r[1], r[2]), r[0]) for r in stale])
    if stale:
        bump_version(conn)


def _apply(conn: Connection, existing: list[dict[str, Any]], drop: set[str],
           write: list[Found]) -> dict[str, Any]:
    """Drop the names ``drop`` and write ``write``: {added, updated, removed} by name (a renamed skill is
    its new name added and its old name removed; a name written again is updated)."""
    before = {r["name"] for r in existing}
    written = {f.skill.name for f in write if f.skill is not None}   # every skill written was parsed
    removed = drop - written
    drop_skills(conn, sorted(removed))
    conn.executemany("DELETE FROM skills WHERE name = ?", [(n,) for n in sorted(drop & written)])
    for f in write:
        _write(conn, f)
    if write or drop:
        bump_version(conn)
    return {"added": sorted(written - before), "updated": sorted(written & before), "removed": sorted(removed)}


def drop_skills(conn: Connection, names: list[str]) -> None:
    """Delete skills from the index and from every session (``skills remove`` and ``skills sync``)."""
    conn.executemany("DELETE FROM skills WHERE name = ?", [(n,) for n in names])
    conn.executemany("DELETE FROM skill_session_skills WHERE skill_name = ?", [(n,) for n in names])


def bump_version(conn: Connection) -> None:
    """The skill set changed (the LLM match cache and the in-memory matcher index key on this)."""
    meta.increment(conn, SKILLS_VERSION_KEY)


def skills_version(conn: Connection) -> str:
    return meta.get(conn, SKILLS_VERSION_KEY) or "0"


def _count(conn: Connection) -> int:
    count: int = conn.execute("SELECT COUNT(*) FROM skills").fetchone()[0]
    return count


def list_skills(conn: Connection) -> dict[str, Any]:
    rows = [dict(r) for r in conn.execute(
        "SELECT name, description, folder, source_dir, updated_at FROM skills ORDER BY name")]
    dirs = [dict(r) for r in conn.execute("SELECT path, added_at, synced_at FROM skill_dirs ORDER BY added_at, rowid")]
    return {"skills": rows, "count": len(rows), "dirs": dirs, "env_dirs": env_dirs()}


def require_skill(conn: Connection, name: str) -> Row:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("a skill name is required")
    row: Row | None = conn.execute("SELECT * FROM skills WHERE name = ?", (name.strip(),)).fetchone()
    if row is None:
        raise NotFoundError(f"Unknown skill: {name!r} (see `kbindex skills list`)")
    found: Row = row
    return found


def show_skill(conn: Connection, name: str) -> dict[str, Any]:
    r = require_skill(conn, name)
    return {"name": r["name"], "description": r["description"], "metadata": json.loads(r["metadata"]),
            "body": r["body"], "folder": r["folder"], "file": str(Path(r["folder"]) / SKILL_FILE),
            "source_dir": r["source_dir"], "content_hash": r["content_hash"],
            "created_at": r["created_at"], "updated_at": r["updated_at"]}


def remove_skill(conn: Connection, name: str) -> dict[str, Any]:
    """Drop a skill from the index (its folder stays on disk: the next sync indexes it again)."""
    with transaction(conn):
        r = require_skill(conn, name)
        drop_skills(conn, [r["name"]])
        bump_version(conn)
    return {"action": "removed", "name": r["name"], "folder": r["folder"]}
