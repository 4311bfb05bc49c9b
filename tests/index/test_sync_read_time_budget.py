"""A file whose read never returns (a cloud-synced placeholder still downloading, a stuck FUSE or network
mount) costs the sync at most its time budget: it is reported in ``errors`` and skipped, the other files
are indexed, and a document indexed before keeps its rows."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from helpers import fulltext_hits, kw, write_doc
from kb_indexer.index import reader as reader_mod


def _corpus(kbdir, n=8):
    for i in range(n):
        write_doc(kbdir, f"d{i}.md", f"# Doc {i}\n\nabout turbulence {i}\n", kw(f"k{i}"))
    write_doc(kbdir, "stuck.md", "# Stuck\n\nabout vortices\n", kw("vortex"))


def _stall_on_stuck(monkeypatch, release: threading.Event | None = None, seconds: float = 30.0):
    real = reader_mod.load_document

    def load(root, rel, *args, **kwargs):
        if rel == "stuck.md":
            if release is not None:
                release.wait(seconds)
            else:
                time.sleep(seconds)
        return real(root, rel, *args, **kwargs)

    monkeypatch.setattr(reader_mod, "load_document", load)


def test_a_read_that_does_not_return_is_skipped_after_the_budget(small, monkeypatch):
    handle, kbdir = small
    _corpus(kbdir)
    release = threading.Event()
    _stall_on_stuck(monkeypatch, release)
    monkeypatch.setenv(reader_mod.READ_SECONDS_ENV, "0.3")
    monkeypatch.setenv(reader_mod.WORKERS_ENV, "0")
    try:
        res = handle.sync()
    finally:
        release.set()  # the abandoned reader thread ends
    assert res["added"] == 8
    assert [e["file"] for e in res["errors"]] == ["stuck.md"]
    assert "took longer than 0.3 s" in res["errors"][0]["message"]
    paths = {r[0] for r in handle.conn.execute("SELECT filepath FROM documents")}
    assert "stuck.md" not in paths and len(paths) == 8


def test_a_document_indexed_before_keeps_its_rows_when_its_read_stalls(small, monkeypatch):
    handle, kbdir = small
    _corpus(kbdir)
    assert handle.sync()["added"] == 9
    write_doc(kbdir, "stuck.md", "# Stuck\n\nabout vortices, edited\n", kw("vortex"))
    release = threading.Event()
    _stall_on_stuck(monkeypatch, release)
    monkeypatch.setenv(reader_mod.READ_SECONDS_ENV, "0.3")
    try:
        res = handle.sync()
    finally:
        release.set()
    assert [e["file"] for e in res["errors"]] == ["stuck.md"]
    assert fulltext_hits(handle.conn, "vortices") == 1  # the version indexed before


@pytest.mark.skipif(multiprocessing.get_start_method(allow_none=False) != "fork",
                    reason="the stalling read is patched in this process and inherited by fork")
def test_reader_processes_apply_the_budget_too(small, monkeypatch):
    handle, kbdir = small
    _corpus(kbdir, 40)
    _stall_on_stuck(monkeypatch, seconds=20.0)  # in a worker: left behind, the worker exits at the end
    monkeypatch.setenv(reader_mod.READ_SECONDS_ENV, "0.3")
    monkeypatch.setenv(reader_mod.WORKERS_ENV, "2")
    res = handle.sync()
    assert res["added"] == 40 and [e["file"] for e in res["errors"]] == ["stuck.md"]


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf", "nan"])
def test_a_bad_budget_is_a_warning_and_the_default_applies(monkeypatch, capfd, value):
    monkeypatch.setenv(reader_mod.READ_SECONDS_ENV, value)
    assert reader_mod.read_seconds() == reader_mod.DEFAULT_READ_SECONDS
    assert reader_mod.READ_SECONDS_ENV in capfd.readouterr().err


def test_an_error_inside_the_reader_thread_is_raised_in_the_sync(small, monkeypatch):
    handle, kbdir = small
    _corpus(kbdir, 3)

    def broken(*args, **kwargs):
        raise KeyError("a bug")  # not a file problem: it must not pass as a slow read or a bad file

    monkeypatch.setattr(reader_mod, "load_document", broken)
    monkeypatch.setenv(reader_mod.WORKERS_ENV, "0")
    with pytest.raises(KeyError):
        handle.sync()
    assert handle.conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
