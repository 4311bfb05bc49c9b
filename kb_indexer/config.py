"""Where the index and the knowledge base live.

The index is found like git finds ``.git``: ``--db`` wins, then ``KBINDEX_DB``,
then the first ``kbindex.db`` in the current directory or one of its parents,
else ``./kbindex.db`` (what ``kbindex init`` creates by default).
The knowledge-base root is stored in the index at ``init``; ``--kb`` /
``KBINDEX_KB`` override it, and its default is ``knowledge-base/`` beside the index.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Union
from urllib.parse import unquote

from kb_indexer import settings
from kb_indexer.notices import warn

DB_FILENAME = "kbindex.db"
DEFAULT_KB_DIRNAME = "knowledge-base"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
_PASSWORD = r"(://[^:/@?#]*:)[^@/?#]*@|((?:^|[?&])password=)[^&]*"


class DbUrl:
    """A PostgreSQL server named by ``--db`` / ``KBINDEX_DB`` (``postgresql://...``). ``url`` is what the
    driver gets; ``str()`` (what every message shows) has the password replaced by ``***``."""

    __slots__ = ("url",)

    def __init__(self, url: str):
        self.url = url

    def __str__(self) -> str:
        return redact(self.url)

    def __repr__(self) -> str:
        return f"DbUrl({redact(self.url)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DbUrl) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)


#: Where an index lives: an SQLite file or a PostgreSQL server.
DbTarget = Union[Path, DbUrl]
#: How a caller names it: a path, a ``postgresql://`` URL, either resolved, or None (the usual lookup).
DbArg = Union[str, "os.PathLike[str]", DbUrl, None]


def is_db_url(target: object) -> bool:
    """True when ``target`` names a PostgreSQL server (a ``postgresql://`` URL or a :class:`DbUrl`)."""
    if isinstance(target, DbUrl):
        return True
    return isinstance(target, str) and target.lower().startswith(POSTGRES_SCHEMES)


def redact(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@`` or ``password=...``) shown as ``***``."""
    return re.sub(_PASSWORD, lambda m: (m.group(1) + "***@") if m.group(1) else m.group(2) + "***", url,
                  flags=re.IGNORECASE)  # compiled on first use (re caches it): not on the SQLite path


def redact_message(text: str, url: str) -> str:
    """A message about ``url`` (a driver's error) with that URL's password hidden: wherever the URL shows
    (:func:`redact`), and wherever the password itself does, as written or percent-decoded (a driver that
    cannot parse a URL quotes pieces of it: ``invalid percent-encoded token: "S3cret%zzPW"``)."""
    out = redact(text)
    secrets = [m.group(1) for m in re.finditer(r"(?:^|[?&])password=([^&]+)", url, flags=re.IGNORECASE)]
    userinfo = re.match(r"^[a-z][a-z0-9+.-]*://([^@/?#]*)@", url, flags=re.IGNORECASE)
    if userinfo and ":" in userinfo.group(1):
        secrets.append(userinfo.group(1).split(":", 1)[1])
    for secret in secrets:
        for form in {secret, unquote(secret)}:
            if form:
                out = out.replace(form, "***")
    return out


def find_db(db: str | os.PathLike[str] | DbUrl | None = None, *, start: Path | None = None) -> DbTarget:
    """Resolve the index path (it may not exist yet), or the PostgreSQL server a URL names."""
    given = db or settings.raw("KBINDEX_DB")
    if isinstance(given, DbUrl):
        return given
    if given and is_db_url(given):
        return DbUrl(str(given))
    if given:
        return Path(given).expanduser().absolute()
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / DB_FILENAME
        if candidate.is_file():
            return candidate
    return here / DB_FILENAME


def warn_shadowed(db_path: DbTarget) -> None:
    """Warn when an index in a parent folder of the new index file ``db_path`` would no longer be found by
    commands run below that file's folder (the nearest one wins)."""
    if isinstance(db_path, DbUrl) or db_path.parent.parent == db_path.parent:
        return
    found = find_db(start=db_path.parent.parent)
    if isinstance(found, Path) and found.is_file():
        warn(f"{found} is an index in a parent folder: commands run here now find {db_path} instead "
             f"(pass --db {found} to use that one)")


def named_db(db: object = None) -> bool:
    """Whether the index is named (``db``, else ``KBINDEX_DB``) rather than found by :func:`find_db` in the
    working folder or a parent. A found one may have come with a cloned repository: the knowledge-base root
    it names is checked (:func:`kb_indexer.roots.foreign_root`)."""
    return bool(db) or settings.flag("KBINDEX_DB")


def named_root(kb: str | os.PathLike[str] | None = None) -> str | os.PathLike[str] | None:
    """The knowledge-base root named for this call (``kb``, else ``KBINDEX_KB``); None: the index's own."""
    return kb or settings.raw("KBINDEX_KB") or None


def default_kb_root(db_path: DbTarget) -> Path:
    """``knowledge-base/`` beside the index file (for a server: in the current directory)."""
    base = Path.cwd().absolute() if isinstance(db_path, DbUrl) else db_path.parent
    return base / DEFAULT_KB_DIRNAME


def stored_root_form(db_path: DbTarget, kb_root: Path) -> Path:
    """How the index remembers its knowledge-base root: relative to the index file's folder when the root is
    inside that folder or beside it (so a copied or moved project keeps working), else absolute (always on
    a server, which has no folder)."""
    if isinstance(db_path, DbUrl):
        return kb_root.absolute()
    base = db_path.absolute().parent
    try:
        rel = Path(os.path.relpath(kb_root.absolute(), base))
    except ValueError:  # another drive (Windows)
        return kb_root.absolute()
    return kb_root.absolute() if rel.parts[:2] == ("..", "..") else rel


def stored_root_path(db_path: DbTarget, stored: str) -> Path:
    """The knowledge-base root from its stored form (a relative one is relative to the index's folder)."""
    path = Path(stored)
    if path.is_absolute() or isinstance(db_path, DbUrl):
        return path
    return Path(os.path.normpath(db_path.absolute().parent / path))
