"""Reading documents for a sync: in this process, or in worker processes while this one writes.

Reading and parsing a document is Python work (about a third of a sync); storing it is SQLite work in
the one writing process. A large sync reads ahead in worker processes so the two overlap. The order is
kept (batches stay deterministic), and only a bounded window of read documents waits in memory.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from itertools import islice
from typing import Any, Iterator, Union

from kb_indexer import settings
from kb_indexer.beneath import cached_folders
from kb_indexer.errors import KbError, ValidationError
from kb_indexer.index.loader import LoadedDocument, load_document
from kb_indexer.index.paths import explicit_keywords_file

# Below this many documents a pool costs more (start-up, ~0.1 s) than it saves.
PARALLEL_MIN_DOCS = 1000
CHUNK_DOCS = 16  # documents per task sent to a worker
WINDOW_CHUNKS = 16  # tasks in flight: at most 256 read documents wait for the writer
PARENT_POLL_S = 0.5  # how soon a worker notices that the writing process is gone
WORKERS_ENV = "KBINDEX_SYNC_WORKERS"  # 0: read in this process
# What one bad file may raise while it is read; reported in ``errors`` with its type, and the sync goes on.
FILE_ERRORS = (OSError, ValueError, RuntimeError, RecursionError, MemoryError)

Read = Union[LoadedDocument, str]  # the document, or why it could not be read


def read_one(root: Path, rel: str, stored_keywords_file: str | None) -> Read:
    """Read and parse one document; anything reading one file can raise becomes the message."""
    try:
        return load_document(root, rel, keywords_source(root, rel, stored_keywords_file), lenient=True)
    except KbError as exc:
        return exc.message
    except FILE_ERRORS as exc:
        return f"{type(exc).__name__}: {exc}"


def keywords_source(kb_root: Path, rel: str, stored: str | None) -> Path | None:
    """The keywords file given with ``add --keywords`` that ``rel`` keeps using (None: the default one).

    A missing one is an error rather than silently dropping the document's keywords.
    """
    explicit = explicit_keywords_file(kb_root, rel, stored)
    if explicit is not None and not explicit.is_file():
        raise ValidationError(f"Keywords file {stored} of {rel} (given with `kbindex add --keywords`) is missing; "
                              f"restore it, or run `kbindex add {rel}` to index the document without it")
    return explicit


READ_SECONDS_ENV = "KBINDEX_READ_SECONDS"
DEFAULT_READ_SECONDS = 30.0


def read_seconds() -> float:
    """The time budget for reading one file (``KBINDEX_READ_SECONDS``, default 30 s)."""
    configured = settings.text(READ_SECONDS_ENV)
    try:
        value = float(configured) if configured else DEFAULT_READ_SECONDS
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        print(f"warning: {READ_SECONDS_ENV}={configured!r} is not a positive number of seconds; "
              f"using {DEFAULT_READ_SECONDS:g}", file=sys.stderr)
        return DEFAULT_READ_SECONDS
    return value


TIMED_CHUNK = 16  # files a helper thread reads while the caller waits (no two threads run Python at once)


class _Chunk:
    """Files read by one helper thread; ``since`` is when its current file's read began."""

    def __init__(self, root: Path, items: list[tuple[str, str | None]]):
        self.root, self.items = root, items
        self.done: list[Any] = []
        self.since = time.monotonic()
        self.finished, self.abandoned = threading.Event(), False

    def run(self) -> None:
        with cached_folders():  # the chunk's files are mostly in one folder: opened once (kb_indexer.beneath)
            for rel, kw in self.items:
                self.since = time.monotonic()
                try:
                    result: Any = read_one(self.root, rel, kw)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                    result = exc
                if self.abandoned:
                    return
                self.done.append(result)
                if isinstance(result, BaseException):
                    break
        self.finished.set()

    def wait(self, seconds: float) -> bool:
        """True when every file is read; False when one read has taken longer than ``seconds``."""
        while not self.finished.wait(timeout=seconds / 4):
            if time.monotonic() - self.since > seconds:
                self.abandoned = True  # the stuck thread is left behind and ends if its read returns
                return False
        return True


def timed_reads(root: Path, items: list[tuple[str, str | None]], seconds: float) -> Iterator[tuple[str, Read]]:
    """``(rel, document or message)`` for ``items`` (``(rel, stored keywords file)``) in order, each read by
    a helper thread while this one waits. A read that does not return within ``seconds`` (a cloud-synced
    placeholder still downloading, a stuck FUSE or network mount) becomes that file's message; its thread
    is left behind and a new one reads on from the next file."""
    i = 0
    while i < len(items):
        chunk = _Chunk(root, items[i:i + TIMED_CHUNK])
        threading.Thread(target=chunk.run, daemon=True, name="kbindex-reader").start()
        complete = chunk.wait(seconds)
        done = list(chunk.done)
        for result in done:
            if isinstance(result, BaseException):  # a bug, or an interrupt: raised here, as without a thread
                raise result
            yield items[i][0], result
            i += 1
        if not complete:
            yield items[i][0], _stalled(seconds)
            i += 1


def _stalled(seconds: float) -> str:
    return (f"reading took longer than {seconds:g} s (a file still being fetched, or a stuck network or FUSE "
            f"mount?); skipped, the index keeps what it had (limit: {READ_SECONDS_ENV})")


def _read_chunk(root: str, items: list[tuple[str, str | None]], seconds: float) -> list[Read]:
    return [doc for _, doc in timed_reads(Path(root), items, seconds)]


def _start_worker(parent: int) -> None:
    """Ctrl-C is the writing process's to handle; a worker whose writer died (``kill -9``) exits."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:  # a dead parent's children are adopted: the parent id changes
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def worker_count(todo: int) -> int:
    """Worker processes for a sync of ``todo`` documents (0: read in this process)."""
    configured = settings.text(WORKERS_ENV)
    if configured:
        try:
            return max(0, min(int(configured), 32))
        except ValueError:
            print(f"warning: {WORKERS_ENV}={configured!r} is not a number; reading in this process",
                  file=sys.stderr)
            return 0
    if todo < PARALLEL_MIN_DOCS:
        return 0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, min(cpus - 1, 3))  # one core stays with the writer


@contextmanager
def helper_process() -> Iterator[Any]:
    """One helper process (an executor), for the sparse index's fold (:func:`kb_indexer.store.sparse.refresh`):
    started like the reader processes (it ends when this process dies), shut down on leaving."""
    from concurrent.futures import ProcessPoolExecutor  # lazy: only a sync with reader processes

    pool = ProcessPoolExecutor(max_workers=1, initializer=_start_worker, initargs=(os.getpid(),))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def read_all(root: Path, todo: list[str], stored: dict[str, str | None]) -> Iterator[tuple[str, Read]]:
    """Yield ``(rel, document or message)`` for ``todo`` in order. ``stored`` maps a path to the keywords
    file it was indexed with. A pool that breaks (a worker killed) hands the rest back to this process."""
    workers = worker_count(len(todo))
    seconds = read_seconds() if todo else DEFAULT_READ_SECONDS
    done = 0
    if workers:
        try:
            for item in _pooled(root, todo, stored, workers, seconds):
                done += 1
                yield item
        except _PoolBroken as exc:
            print(f"warning: the sync's reader processes stopped ({exc}); reading in this process",
                  file=sys.stderr)
    yield from timed_reads(root, [(rel, stored.get(rel)) for rel in todo[done:]], seconds)


class _PoolBroken(Exception):
    pass


def _pooled(root: Path, todo: list[str], stored: dict[str, str | None], workers: int, seconds: float) -> Iterator[tuple[str, Read]]:
    from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor  # lazy: a sync with reader processes

    chunks = iter([todo[i:i + CHUNK_DOCS] for i in range(0, len(todo), CHUNK_DOCS)])
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_start_worker, initargs=(os.getpid(),))

    def submit(chunk: list[str]) -> tuple[list[str], Any]:
        return chunk, pool.submit(_read_chunk, str(root), [(r, stored.get(r)) for r in chunk], seconds)

    try:
        pending = deque(submit(c) for c in islice(chunks, WINDOW_CHUNKS))
        while pending:
            names, future = pending.popleft()
            try:
                results = future.result()
            except BrokenProcessPool as exc:
                raise _PoolBroken(str(exc) or "a worker died") from None
            following = next(chunks, None)
            if following is not None:
                pending.append(submit(following))
            yield from zip(names, results)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
