"""Keywords files without their note: ``NAME.keywords.json`` with no ``NAME.md`` beside it, as a sync finds them.

* One that holds only what enrich generated (:func:`kb_indexer.index.generated.only_generated`) goes with its
  note: sync deletes it and says so in ``warnings`` (enrich writes one again for a note of that name).
* A person's stays, and is named in ``warnings`` by the sync that first finds it, once: later syncs say nothing
  of it while it is unchanged (its stat signature is kept in ``meta``), and name it again when it changes.
* One that a document names as its keywords file (``add --keywords``) is not an orphan.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from kb_indexer.errors import KbError
from kb_indexer.index.files import load_keywords_file
from kb_indexer.index.generated import only_generated
from kb_indexer.index.paths import default_keywords_rel, sig_of
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
        if sig is not None and _generated(root, rel) and _regular_sig(root / rel) == sig:
            try:
                os.unlink(root / rel)
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
