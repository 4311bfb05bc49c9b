"""The lock of a long job (``sync``, ``learn``) on an SQLite index: an exclusive ``flock`` on
``<index>-<job>.lock`` beside the index file (POSIX; on a system without ``fcntl`` the job runs unlocked)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Iterator

try:
    import fcntl as _fcntl   # POSIX
    fcntl: Any = _fcntl
except ImportError:   # Windows: the job runs unlocked
    fcntl = None

from kb_indexer.notices import warn
from kb_indexer.store.errors import busy_error, busy_timeout_ms

__all__ = ["FILE_LOCK_POLL_S", "file_lock"]

#: How often a job waiting for another's lock file tries it again (seconds).
FILE_LOCK_POLL_S = 0.05


@contextmanager
def file_lock(path: str, job: str, waiting: str) -> Iterator[None]:
    """Hold ``<path>-<job>.lock`` while the block runs, waiting up to the busy timeout (saying ``waiting`` on
    stderr), then failing as ``busy``. No path (an in-memory index), a folder where no lock file can be made
    or no ``fcntl``: unlocked."""
    try:
        fd = os.open(f"{path}-{job}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644) \
            if path and fcntl is not None else None
    except OSError:
        fd = None
    if fd is None:
        yield
        return
    try:
        if not _try_flock(fd):
            deadline = time.monotonic() + busy_timeout_ms() / 1000
            warn(f"{waiting}: waiting for it (up to {busy_timeout_ms() / 1000:g} s)")
            while not _try_flock(fd):
                if time.monotonic() >= deadline:
                    raise busy_error(path, f"the index's {job} lock ({path}-{job}.lock)")
                time.sleep(FILE_LOCK_POLL_S)
        yield
    finally:
        os.close(fd)   # closing the file releases the lock


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
