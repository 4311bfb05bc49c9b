"""Writing a file safely: atomically, never through a symlink, never outside the knowledge-base root.

Every file kbindex writes goes through :func:`atomic_file` (or :func:`write_atomic`): ``<doc>.keywords.json``
(``enrich``), the files named with ``--output`` (``export``, ``export-similarities``,
``suggest-similarities``) and the vectors' sidecar files beside the index. The target's folder is opened
once, and everything after is done relative to that open folder (``dir_fd``): the data goes to a new
temporary file in it, created with an unpredictable name, ``O_EXCL`` and ``O_NOFOLLOW`` (no symlink or
file planted there is followed or reused), is flushed to disk, then renamed over the target
(``os.replace`` replaces a link there, it never writes through it), and the folder is flushed. A reader,
or a crash, sees the old file or the new one, never half of one; on any error the temporary file is
removed.

Inside the knowledge base (``root`` given) the folder is reached from the root one component at a time
through no symlink (:func:`kb_indexer.beneath.open_folder`), so a folder swapped for a link to elsewhere
while kbindex runs cannot move the write outside the root; a target that is a symlink is refused too:
kbindex does not replace a link a person made. Where ``dir_fd`` is not supported (Windows) the same rules
are checked on the path (:func:`check_target`) and :func:`tempfile.mkstemp` makes the temporary file.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from kb_indexer.beneath import SUPPORTED, open_folder, resolves_outside
from kb_indexer.errors import KbError, ValidationError


def check_target(path: Path, root: Path) -> None:
    """Refuse to write ``path`` inside the knowledge base ``root`` when it is a symlink (a dangling one
    too) or its folder resolves outside the root (the path-based check, where ``dir_fd`` is missing)."""
    if os.path.islink(path):
        raise _symlink_refusal(path)
    if resolves_outside(os.path.realpath(root), path.parent):
        raise ValidationError(f"Refusing to write {path}: its folder resolves outside the knowledge-base root "
                              f"{root}", code="outside_kb")


@contextmanager
def atomic_file(path: str | os.PathLike[str], *, root: Path | None = None,
                mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content to; it replaces ``path`` when the block ends without
    an exception (otherwise the temporary file is removed and ``path`` is untouched). ``root``: the
    knowledge-base root ``path`` must stay in (see :func:`check_target`). ``mode``: the new file's
    permissions (default: those of the file it replaces, else ``0o666`` less the umask)."""
    path = Path(path)
    if not SUPPORTED:
        with _atomic_file_by_path(path, root, mode) as fh:
            yield fh
        return
    folder = _open_folder(path, root)
    try:
        with _atomic_in(folder, path, root, mode) as fh:
            yield fh
    finally:
        os.close(folder)


def _open_folder(path: Path, root: Path | None) -> int:
    """The target's folder: inside a knowledge base walked from its root through no symlink (a folder
    swapped for a link after a check cannot move the write outside); elsewhere, as the user named it."""
    if root is not None:
        return open_folder(root, path.parent, f"Refusing to write {path}:")
    return os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))


@contextmanager
def _filled(fd: int, final_mode: int, replace: Callable[[], None], discard: Callable[[], None]) -> Iterator[BinaryIO]:
    """The temporary file ``fd`` as the caller fills it, given its final mode, flushed to disk and put in
    place by ``replace``; on any error ``discard`` removes it."""
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fchmod(fh.fileno(), final_mode)
            os.fsync(fh.fileno())
        replace()
    except BaseException:
        try:
            discard()
        except OSError:
            pass
        raise


@contextmanager
def _atomic_in(folder: int, path: Path, root: Path | None, mode: int | None) -> Iterator[BinaryIO]:
    """Write ``path.name`` in the open ``folder``: a new temporary file (``O_EXCL``, ``O_NOFOLLOW``, an
    unpredictable name), flushed to disk, renamed over the target, the folder flushed too. On any error
    the temporary file is removed."""
    import secrets  # lazy: secrets, only when writing (a query imports this module)

    name = path.name
    current = _lstat(name, folder)
    if root is not None and current is not None and stat.S_ISLNK(current.st_mode):
        raise _symlink_refusal(path)
    final_mode = _mode_of(current) if mode is None else mode
    tmp = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                 dir_fd=folder)
    with _filled(fd, final_mode, lambda: os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder),
                 lambda: os.unlink(tmp, dir_fd=folder)) as fh:
        yield fh
    try:
        os.fsync(folder)  # the rename itself reaches the disk
    except OSError:
        pass  # a file system that cannot flush a folder: the file's data is flushed all the same


@contextmanager
def _atomic_file_by_path(path: Path, root: Path | None, mode: int | None) -> Iterator[BinaryIO]:
    """Where ``dir_fd`` is not supported (Windows): checks on the path, then ``mkstemp`` beside it."""
    import tempfile  # lazy: tempfile costs start-up time; only when writing (a query imports this module)

    if root is not None:
        check_target(path, root)
    final_mode = _mode_of(_lstat(path)) if mode is None else mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with _filled(fd, final_mode, lambda: os.replace(tmp, path), lambda: os.unlink(tmp)) as fh:
        yield fh


def _symlink_refusal(path: Path) -> ValidationError:
    return ValidationError(f"Refusing to write {path}: it is a symlink (kbindex never writes a file of the "
                           "knowledge base through a link, nor replaces one); remove the link to let it write")


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, root: Path | None = None,
                 mode: int | None = None) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` with :func:`atomic_file`."""
    with atomic_file(path, root=root, mode=mode) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_user_file(path: str | os.PathLike[str], text: str) -> None:
    """Write a file a user named (``--output F``) with :func:`write_atomic`; a failure (no such folder, no
    permission) is the error ``write_failed``, saying why."""
    with user_file(path) as fh:
        fh.write(text.encode("utf-8"))


@contextmanager
def user_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """:func:`atomic_file` for a file a user named, written piece by piece (``export --output F``); a failure
    to write it (no such folder, no permission, a full disk) is the error ``write_failed``, saying why."""
    try:
        with atomic_file(path) as fh:
            yield fh
    except OSError as exc:
        raise KbError(f"Cannot write {path}: {exc.strerror or exc}", code="write_failed") from None


def _lstat(name: str | os.PathLike[str], folder: int | None = None) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _mode_of(current: os.stat_result | None) -> int:
    """The permissions of the file replaced (a regular one), else ``0o666`` less the umask."""
    if current is not None and stat.S_ISREG(current.st_mode):
        return stat.S_IMODE(current.st_mode)
    umask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(umask)
    return 0o666 & ~umask
