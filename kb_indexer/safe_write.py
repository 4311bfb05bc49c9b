"""Writing a file safely: atomically, never through a symlink, never outside the knowledge-base root.

Every file kbindex writes goes through :func:`atomic_file` (or :func:`write_atomic`): ``<doc>.keywords.json``
(``enrich``), the files named with ``--output`` (``export``, ``export-similarities``,
``suggest-similarities``) and the vectors' sidecar files beside the index. The data goes to a new
temporary file beside the target, created with an unpredictable name and ``O_EXCL``
(:func:`tempfile.mkstemp`: no symlink or file planted there in advance is followed or reused), is
flushed to disk, then renamed over the target (``os.replace`` replaces a link there, it never writes
through it). A reader, or a crash, sees the old file or the new one, never half of one.

Inside the knowledge base (``root`` given) a target that is a symlink, or whose folder resolves outside
the root, is refused (:func:`check_target`): kbindex does not replace a link a person made, and a file it
writes for a document stays in the knowledge base. :func:`resolves_outside` is the one rule for "outside
the root" that the walk applies to documents and the loader to keywords files as well.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from kb_indexer.errors import ValidationError


def resolves_outside(root_real: str, path: str | os.PathLike) -> bool:
    """Whether ``path``, its symlinks resolved, leads outside ``root_real`` (an already resolved root)."""
    try:
        return os.path.commonpath([root_real, os.path.realpath(path)]) != root_real
    except ValueError:  # mixed absolute and relative, or another drive
        return True


def check_target(path: Path, root: Path) -> None:
    """Refuse to write ``path`` inside the knowledge base ``root`` when it is a symlink (a dangling one
    too) or its folder resolves outside the root."""
    if os.path.islink(path):
        raise ValidationError(f"Refusing to write {path}: it is a symlink (kbindex never writes a file of the "
                              "knowledge base through a link, nor replaces one); remove the link to let it write")
    if resolves_outside(os.path.realpath(root), path.parent):
        raise ValidationError(f"Refusing to write {path}: its folder resolves outside the knowledge-base root "
                              f"{root}", code="outside_kb")


@contextmanager
def atomic_file(path: str | os.PathLike, *, root: Path | None = None, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to; it replaces ``path`` when the block ends without
    an exception (otherwise the temporary file is removed and ``path`` is untouched). ``root``: the
    knowledge-base root ``path`` must stay in (see :func:`check_target`). ``mode``: the new file's
    permissions (default: those of the file it replaces, else ``0o666`` less the umask)."""
    import tempfile  # only when writing (a query imports this module, and tempfile costs start-up time)

    path = Path(path)
    if root is not None:
        check_target(path, root)
    final_mode = _mode(path) if mode is None else mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), final_mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: str | os.PathLike, data: bytes | str, *, root: Path | None = None,
                 mode: int | None = None) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` with :func:`atomic_file`."""
    with atomic_file(path, root=root, mode=mode) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def _mode(path: Path) -> int:
    try:
        st = os.stat(path, follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except OSError:
        pass
    umask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(umask)
    return 0o666 & ~umask

