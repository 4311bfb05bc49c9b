"""Knowledge-base roots you set for an index outside its own folder, remembered outside every index.

A ``kbindex.db`` found in the working folder or a parent (named by neither ``--db`` nor ``KBINDEX_DB``) may have
come with a cloned repository, and the root stored in it could name any folder. Such a root is used only when
it lies in the index's own folder (links resolved: a ``knowledge-base`` link to elsewhere leads outside), or when
you set it on this machine: ``init`` creating the index, or ``init --kb DIR``, remembers the pair here, in
``$XDG_STATE_HOME/kbindex/roots.json`` (``~/.local/state/kbindex/roots.json``), a private file no index can write. Naming the root now (``--kb``, ``KBINDEX_KB``) or the index (``--db``) needs
nothing remembered.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kb_indexer.notices import warn

MAX_BYTES = 1 << 20   # a roots file larger than this is not read (thousands of indexes fit in far less)


def roots_file() -> Path:
    base = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(base).expanduser().absolute() / "kbindex" / "roots.json"


def _read(path: Path) -> dict[str, str]:
    try:
        if path.is_symlink() or path.stat().st_size > MAX_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(data, dict) else {}


def remembered(db_path: Path, root: Path) -> bool:
    """Whether ``root`` was set for the index ``db_path`` on this machine (:func:`remember`)."""
    return _read(roots_file()).get(str(db_path.resolve())) == str(root.resolve())


def remember(db_path: Path | object, root: Path) -> None:
    """Remember that ``root`` was set for the index file ``db_path`` when it lies outside the index's folder
    (written atomically, private); a file that cannot be written is a warning (a later open says what to do)."""
    if not isinstance(db_path, Path) or not outside_own_folder(db_path, root):
        return
    path = roots_file()
    entries = _read(path)
    entries[str(db_path.resolve())] = str(root.resolve())
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".roots-{os.getpid()}.tmp")   # private, created new (no link followed), then renamed
        if os.path.lexists(tmp):   # left by a process killed mid-write that had this pid
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entries, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as exc:
        warn(f"could not remember the knowledge-base root {root} in {path} ({exc.strerror or exc})")


def outside_own_folder(db_path: Path, path: Path) -> bool:
    """Whether ``path`` (links resolved) lies outside the folder of the index file ``db_path``."""
    folder = db_path.parent.resolve()
    target = path.resolve()
    return target != folder and folder not in target.parents


def foreign_root(db_path: Path, root: Path) -> str | None:
    """Why a found index may not use its stored knowledge-base ``root`` (None: it may): the root lies outside
    the index's folder and was not set for it on this machine (:func:`remembered`)."""
    if not outside_own_folder(db_path, root) or remembered(db_path, root):
        return None
    target = root.resolve()
    shown = f"{root} (which leads to {target})" if target != root.absolute() else str(root)
    return (f"The index {db_path} was found in this folder or a parent, and it names a knowledge-base root outside "
            f"its own folder that was not set here: {shown}. kbindex reads and writes files there only when you say "
            f"so: pass --kb {root} (or set KBINDEX_KB), run `kbindex init --kb {root}` here once to remember it, or "
            f"name the index with --db {db_path} (or KBINDEX_DB)")
