"""Paths inside the knowledge-base root (anything resolving outside is refused)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from kb_indexer import settings
from kb_indexer.config import redact
from kb_indexer.errors import ValidationError

KEYWORDS_SUFFIX = ".keywords.json"


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (both as given: resolve them first where links matter)."""
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def to_relative(kb_root: Path, path: str | os.PathLike[str], *, must_exist: bool = True, from_cwd: bool = True) -> str:
    """Map a user-given path to the stored form: relative to the KB root, POSIX style.

    A relative path is tried against the current directory (unless ``from_cwd`` is False: paths an MCP client
    sends are relative to the root, whatever the server's working directory), then against the KB root; the
    first existing candidate that resolves inside the root wins. A path is refused only when every existing
    candidate resolves (symlinks included) outside the root.
    """
    try:
        rel = _to_relative(kb_root, path, must_exist, from_cwd)
    except OSError as exc:  # a file name too long for the file system, say: no such file can be in the KB
        raise ValidationError(f"File not found: {path} ({exc.strerror or type(exc).__name__})",
                              code="not_found") from None
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
        raise ValidationError(f"{shown}: the file name is not valid UTF-8; rename it to index it") from None
    return rel


def _to_relative(kb_root: Path, path: str | os.PathLike[str], must_exist: bool, from_cwd: bool) -> str:
    root = kb_root.resolve()
    raw = Path(path).expanduser() if from_cwd else Path(path)
    candidates = [raw] if raw.is_absolute() else [Path.cwd() / raw, root / raw] if from_cwd else [root / raw]
    for cand in candidates:
        if os.path.islink(cand) and not cand.exists():
            _refuse_broken_link(cand, path)
    outside = []
    for cand in candidates:
        if cand.exists():
            resolved = cand.resolve()
            if is_inside(root, resolved):
                return resolved.relative_to(root).as_posix()
            outside.append(cand)
    refuse = ValidationError(f"Refusing {path}: it is outside the knowledge-base root{_which_root(root, from_cwd)}",
                             code="outside_kb")
    if must_exist:
        if outside or not is_inside(root, Path(os.path.normpath(candidates[-1].absolute()))):
            raise refuse
        raise ValidationError(f"File not found: {path}", code="not_found")
    # Not on disk inside the KB (e.g. already deleted): accept a clean path as the stored form, unless the
    # KB-root candidate itself exists and leads outside (a symlink).
    if raw.is_absolute():
        resolved = Path(os.path.normpath(raw))
        if outside or not is_inside(root, resolved):
            raise refuse
        return resolved.relative_to(root).as_posix()
    if candidates[-1] in outside:
        raise refuse
    posix = PurePosixPath(str(raw).replace("\\", "/"))
    norm = PurePosixPath(os.path.normpath(str(posix)).replace("\\", "/"))
    if str(norm).startswith("..") or norm.is_absolute():
        raise refuse
    return norm.as_posix()


def _which_root(root: Path, from_cwd: bool) -> str:
    """Which root a refused path is outside of, for the command line (`` /abs/root``, and the index KBINDEX_DB
    names: it may not be this folder's). Nothing for a client's path (an MCP client's, ``from_cwd`` False):
    the server's folders are not a remote client's business, and its paths are relative to the root anyway."""
    if not from_cwd:
        return ""
    named = settings.raw("KBINDEX_DB")
    return f" {root}" + (f" (the root of the index KBINDEX_DB names: {redact(named)})" if named else "")


def _refuse_broken_link(cand: Path, shown: str | os.PathLike[str]) -> None:
    """A symlink that leads nowhere: a loop is said as such (``exists()`` would just say False)."""
    try:
        os.stat(cand)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValidationError(f"{shown} is a symlink loop (the link leads back to itself)") from None


def keywords_path_for(md_path: Path) -> Path:
    return md_path.with_name(md_path.stem + KEYWORDS_SUFFIX) if md_path.suffix else \
        md_path.with_name(md_path.name + KEYWORDS_SUFFIX)


def sig_of(st: os.stat_result) -> str:
    """A file's stat signature, ``"{mtime_ns}:{size}"``: what sync records and the stale checks compare."""
    return f"{st.st_mtime_ns}:{st.st_size}"


def stat_sig(md_path: Path, kw_path: Path | None) -> str:
    """``"{mtime_ns}:{size}"`` of the markdown file, plus ``"|{mtime_ns}:{size}"`` of its keywords file if any.

    A markdown file that cannot be stat-ed (deleted meanwhile, a dangling symlink) is a ValidationError
    with code ``not_found``; a keywords file that vanished counts as absent.
    """
    try:
        st = md_path.stat()
    except FileNotFoundError:
        raise ValidationError(f"File not found (deleted, or a dangling symlink): {md_path}",
                              code="not_found") from None
    except OSError as exc:
        raise ValidationError(f"Cannot read {md_path}: {exc.strerror or exc}") from None
    sig = sig_of(st)
    if kw_path is not None:
        try:
            kst = kw_path.stat()
        except OSError:
            return sig
        if stat.S_ISREG(kst.st_mode):
            sig += "|" + sig_of(kst)
    return sig


def store_keywords_file(kb_root: Path, kw_path: Path) -> str:
    """How a keywords file is remembered: relative to the KB root (POSIX) when inside it, else absolute."""
    resolved = kw_path.expanduser().resolve()
    root = kb_root.resolve()
    if is_inside(root, resolved):
        return resolved.relative_to(root).as_posix()
    return str(resolved)


def default_keywords_rel(rel: str) -> str:
    """The stored form of a document's default keywords file (``<stem>.keywords.json`` beside it).

    String operations only (as ``PurePosixPath.stem``): sync asks this for every stored document."""
    slash = rel.rfind("/")
    name = rel[slash + 1:]
    dot = name.rfind(".")
    return rel[: slash + 1] + (name[:dot] if dot > 0 else name) + KEYWORDS_SUFFIX


def explicit_keywords_file(kb_root: Path, rel: str, stored: str | None) -> Path | None:
    """The keywords file given with ``add --keywords`` (``stored`` as kept in the index), or None when the
    document uses its default ``.keywords.json`` (or none)."""
    if not stored:
        return None
    if stored == default_keywords_rel(rel):
        return None
    path = Path(stored)
    return path if path.is_absolute() else kb_root / path
