"""A large sync reads documents in worker processes while it writes: the index is the same as when it
reads them itself, bad files are reported the same way, and a worker that dies costs nothing."""

from __future__ import annotations

import multiprocessing
import os
import json
import subprocess

import pytest

from helpers import fulltext_bodies, fulltext_hits, kw, write_doc
from kb_indexer.index import reader as reader_mod
from kb_indexer.store import fulltext
from tests.conftest import kbindex_exe


def _corpus(kbdir, n=60):
    for i in range(n):
        write_doc(kbdir, f"area-{i % 3}/d{i:03d}.md", f"# Doc {i}\n\nbody {i} about turbulence {i % 7}\n",
                  kw(f"s{i}", f"k{i % 5}", "shared"))
    write_doc(kbdir, "front.md", "---\ntitle: Front\nkeywords: [alpha, beta]\n---\n\nfront matter body\n")
    (kbdir / "broken.md").write_text("# Broken\n", encoding="utf-8")
    (kbdir / "broken.keywords.json").write_text("{not json", encoding="utf-8")
    (kbdir / "latin1.md").write_bytes(b"# Caf\xe9\n\nbody\n")
    write_doc(kbdir, "long.md", "# Long\n\n" + "boundary layer " * 400 + "\n")  # over the limit set below


def _index(handle) -> dict:
    conn = handle.conn
    return {
        "docs": conn.execute("SELECT filepath, title, summary, content_hash, keywords_file FROM documents "
                             "ORDER BY filepath").fetchall(),
        "keywords": conn.execute("SELECT d.filepath, k.keyword, dk.source FROM document_keywords dk "
                                 "JOIN documents d ON d.id = dk.document_id JOIN keywords k ON k.id = dk.keyword_id "
                                 "ORDER BY 1, 2").fetchall(),
        "fts": sorted(fulltext.titled_texts(conn)),
    }


def _sync(handle, monkeypatch, workers: str) -> dict:
    monkeypatch.setenv(reader_mod.WORKERS_ENV, workers)
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "4096")  # long.md is truncated with a warning
    res = handle.sync()
    res["errors"] = sorted((e["file"], e["message"]) for e in res["errors"])
    res["warnings"] = sorted((w["file"], w["message"]) for w in res["warnings"])
    return res


def test_reading_in_worker_processes_gives_the_same_index_and_report(tmp_path, monkeypatch):
    from kb_indexer.api import KnowledgeBase

    results, indexes = [], []
    for workers in ("0", "2"):
        kbdir = tmp_path / workers / "knowledge-base"
        kbdir.mkdir(parents=True)
        _corpus(kbdir)
        handle, _ = KnowledgeBase.init(tmp_path / workers / "kbindex.db", kbdir)
        res = _sync(handle, monkeypatch, workers)
        results.append({k: res[k] for k in ("added", "updated", "unchanged", "removed", "errors", "warnings")})
        indexes.append(_index(handle))
        handle.close()
    assert results[0]["added"] == 63  # broken.md too, without its broken keywords file
    assert [f for f, _ in results[0]["errors"]] == ["broken.keywords.json", "latin1.md"]
    assert [f for f, _ in results[0]["warnings"]] == ["long.md"]
    assert results[1] == results[0]
    assert indexes[1] == indexes[0]


def test_a_changed_file_is_reread_by_the_workers(small, monkeypatch):
    handle, kbdir = small
    _corpus(kbdir, 20)
    _sync(handle, monkeypatch, "2")
    write_doc(kbdir, "area-0/d000.md", "# Doc zero\n\nrewritten about vortices\n", kw("vortex"))
    res = _sync(handle, monkeypatch, "2")
    assert (res["updated"], res["added"]) == (1, 0)
    assert fulltext_hits(handle.conn, "vortices") == 1


@pytest.mark.skipif(multiprocessing.get_start_method(allow_none=False) != "fork",
                    reason="the failing worker is patched in this process and inherited by fork")
def test_a_worker_that_dies_hands_the_rest_back_and_nothing_is_lost(small, monkeypatch, capfd):
    handle, kbdir = small
    _corpus(kbdir, 60)
    real = reader_mod.read_one
    parent = os.getpid()

    def dies_on_d030(root, rel, stored):
        if rel.endswith("d030.md") and os.getpid() != parent:
            os._exit(9)  # a worker killed (the OOM killer, say) while it reads
        return real(root, rel, stored)

    # read_one, not _read_chunk: the task sent to the pool must stay picklable; forked workers inherit the patch
    monkeypatch.setattr(reader_mod, "read_one", dies_on_d030)
    res = _sync(handle, monkeypatch, "2")
    assert res["added"] == 63 and [f for f, _ in res["errors"]] == ["broken.keywords.json", "latin1.md"]
    assert "reading in this process" in capfd.readouterr().err
    docs = handle.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert len(fulltext_bodies(handle.conn)) == docs == 63


def test_a_bad_worker_setting_is_a_warning_and_the_sync_reads_in_process(small, monkeypatch, capfd):
    handle, kbdir = small
    _corpus(kbdir, 5)
    res = _sync(handle, monkeypatch, "many")
    assert res["added"] == 8 and len(res["errors"]) == 2
    assert "KBINDEX_SYNC_WORKERS" in capfd.readouterr().err


def test_the_installed_command_syncs_with_worker_processes(tmp_path):
    kbdir = tmp_path / "knowledge-base"
    kbdir.mkdir()
    _corpus(kbdir, 30)
    env = dict(os.environ, KBINDEX_SYNC_WORKERS="2", KBINDEX_MAX_DOC_BYTES="4096")
    run = lambda *a: subprocess.run([*kbindex_exe(), *a, "--format", "json"], cwd=tmp_path, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    assert run("init").returncode == 0
    proc = run("sync")
    assert proc.returncode == 0, proc.stderr  # bad files are reported, not a failed command
    out = json.loads(proc.stdout)
    assert out["added"] == 33 and [e["file"] for e in out["errors"]] == ["broken.keywords.json", "latin1.md"]
    assert [w["file"] for w in out["warnings"]] == ["long.md"]


ORPHAN = """
import os, sys, time
from kb_indexer.index import reader
reader.PARENT_POLL_S = 0.05
writer = os.getpid()  # given to the worker as the pool gives it: taken before the fork
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1), os.dup2(null, 2)  # the test reads the writer's output to its end
    reader._start_worker(writer)
    time.sleep(60)  # a worker waiting for work; the test fails if it is still here
    os._exit(3)
print(pid, flush=True)
os._exit(0)  # the writer dies without shutting its pool down, as under kill -9
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not (hasattr(os, "fork") and os.path.isdir("/proc/self")), reason="needs fork and /proc")
def test_a_worker_exits_when_the_writing_process_is_killed():
    import sys
    import time

    out = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=60)
    child = int(out.stdout.split()[0])
    deadline = time.monotonic() + 30  # a hang guard, not a timing assert: the worker sleeps 60 s otherwise
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
