"""Paths inside the knowledge-base root (anything resolving outside is refused)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from kb_indexer.errors import ValidationError

KEYWORDS_SUFFIX = ".keywords.json"


def _inside(root: Path, path: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def to_relative(kb_root: Path, path: str | os.PathLike, *, must_exist: bool = True) -> str:
    """Map a user-given path to the stored form: relative to the KB root, POSIX style.

    A relative path is tried against the current directory, then against the
    KB root. A path that resolves (symlinks included) outside the root is refused.
    """
    root = kb_root.resolve()
    raw = Path(path).expanduser()
    candidates = [raw] if raw.is_absolute() else [Path.cwd() / raw, root / raw]
    for cand in candidates:
        if cand.exists():
            resolved = cand.resolve()
            if not _inside(root, resolved):
                raise ValidationError(f"Refusing {path}: it is outside the knowledge-base root {root}",
                                      code="outside_kb")
            return resolved.relative_to(root).as_posix()
    if must_exist:
        for cand in candidates:
            if not _inside(root, Path(os.path.normpath(cand.absolute()))) and cand is candidates[-1]:
                raise ValidationError(f"Refusing {path}: it is outside the knowledge-base root {root}",
                                      code="outside_kb")
        raise ValidationError(f"File not found: {path}", code="not_found")
    # Not on disk (e.g. already deleted): accept a clean relative path as the stored form.
    if raw.is_absolute():
        resolved = Path(os.path.normpath(raw))
        if not _inside(root, resolved):
            raise ValidationError(f"Refusing {path}: it is outside the knowledge-base root {root}",
                                  code="outside_kb")
        return resolved.relative_to(root).as_posix()
    posix = PurePosixPath(str(raw).replace("\\", "/"))
    norm = PurePosixPath(os.path.normpath(str(posix)).replace("\\", "/"))
    if str(norm).startswith("..") or norm.is_absolute():
        raise ValidationError(f"Refusing {path}: it is outside the knowledge-base root {root}", code="outside_kb")
    return norm.as_posix()


def keywords_path_for(md_path: Path) -> Path:
    return md_path.with_name(md_path.stem + KEYWORDS_SUFFIX) if md_path.suffix else \
        md_path.with_name(md_path.name + KEYWORDS_SUFFIX)


def stat_sig(md_path: Path, kw_path: Path | None) -> str:
    st = md_path.stat()
    sig = f"{st.st_mtime_ns}:{st.st_size}"
    if kw_path is not None and kw_path.is_file():
        kst = kw_path.stat()
        sig += f"|{kst.st_mtime_ns}:{kst.st_size}"
    return sig
