"""One bad file never stops a sync or an add: it is reported in ``errors`` (with what is wrong) and skipped.

FIFOs are exercised in a subprocess with a timeout, so a regression that blocks on one fails instead of
hanging the suite.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest

from helpers import kw, write_doc
from kb_indexer.errors import ValidationError

BAD_NAME = os.fsdecode(b"bad-\xff-name.md")


def _ok(kbdir):
    write_doc(kbdir, "good.md", "# Good\n\ntext\n", kw("good", "fine"))


def _messages(res):
    return {e["file"]: e["message"] for e in res["errors"]}


def test_a_file_name_that_is_not_utf8_is_reported_and_skipped(small):
    handle, kbdir = small
    _ok(kbdir)
    (kbdir / BAD_NAME).write_bytes(b"# Bad name\n\ntext\n")
    res = handle.sync()
    assert res["added"] == 1
    msgs = _messages(res)
    assert msgs == {"bad-\\xff-name.md": "the file name is not valid UTF-8; rename it to index it"}
    json.dumps(res)  # the report itself is valid JSON text
    assert handle.stale()["stale"] is False


def test_a_symlink_loop_is_reported_and_skipped(small):
    handle, kbdir = small
    _ok(kbdir)
    os.symlink("loop.md", kbdir / "loop.md")
    res = handle.sync()
    assert res["added"] == 1
    assert "symlink loop" in _messages(res)["loop.md"]


def test_a_socket_named_like_a_document_is_reported(small, tmp_path):
    handle, kbdir = small
    _ok(kbdir)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(kbdir / "notes.md"))
    except OSError:
        pytest.skip("cannot bind a unix socket here")
    try:
        res = handle.sync()
    finally:
        sock.close()
    assert res["added"] == 1
    assert "socket" in _messages(res)["notes.md"]


def test_a_keywords_file_nested_5000_deep_is_a_clear_error(small):
    handle, kbdir = small
    _ok(kbdir)
    write_doc(kbdir, "deep.md", "# Deep\n\ntext\n")
    (kbdir / "deep.keywords.json").write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    res = handle.sync()
    assert res["added"] == 2  # deep.md, without its keywords file
    assert "nested more than" in _messages(res)["deep.keywords.json"]


def test_a_100kb_keyword_is_refused_with_its_file(small):
    handle, kbdir = small
    _ok(kbdir)
    write_doc(kbdir, "huge.md", "# Huge\n\ntext\n", kw("s", "x" * 100_000))
    write_doc(kbdir, "fm.md", "---\nkeywords: [" + "y" * 100_000 + "]\n---\n# FM\n\ntext\n")
    res = handle.sync()
    assert res["added"] == 3  # huge.md without its keywords file, fm.md without that keyword
    msgs = _messages(res)
    assert "100000 characters" in msgs["huge.keywords.json"] and "100000 characters" in msgs["fm.md"]
    assert [e.get("indexed") for e in res["errors"] if e["file"] == "fm.md"] == [True]
    assert handle.conn.execute("SELECT max(length(keyword)) FROM keywords").fetchone()[0] < 200


def test_anything_one_file_raises_is_reported_and_the_sync_goes_on(small, monkeypatch):
    from kb_indexer.index import reader as reader_mod

    handle, kbdir = small
    _ok(kbdir)
    write_doc(kbdir, "boom.md", "# Boom\n\ntext\n")
    real = reader_mod.load_document

    def explodes(root, rel, *args, **kwargs):
        if rel == "boom.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real(root, rel, *args, **kwargs)

    monkeypatch.setattr(reader_mod, "load_document", explodes)
    res = handle.sync()
    assert res["added"] == 1
    assert _messages(res)["boom.md"].startswith("RecursionError")


@pytest.mark.parametrize("rel", [".hidden.md", ".git/notes.md", "__pycache__/x.md", "node_modules/pkg/README.md",
                                 "sub/.drafts/x.md"])
def test_add_refuses_files_sync_would_drop(small, rel):
    handle, kbdir = small
    write_doc(kbdir, rel, "# X\n\ntext\n")
    with pytest.raises(ValidationError, match="not part of the knowledge base"):
        handle.add(str(kbdir / rel))
    assert handle.list_docs()["documents"] == []


_FIFO_SCRIPT = r"""
import json, os, sys
from kb_indexer.api import KnowledgeBase
from kb_indexer.errors import KbError
root, mode = sys.argv[1], sys.argv[2]
kbdir = os.path.join(root, "kb")
os.makedirs(kbdir)
handle, _ = KnowledgeBase.init(os.path.join(root, "i.db"), kbdir)
with open(os.path.join(kbdir, "good.md"), "w") as f:
    f.write("# Good\n\ntext\n")
with open(os.path.join(kbdir, "notes.md"), "w") as f:
    f.write("# Notes\n\ntext\n")
if mode == "update":
    handle.sync()
    os.unlink(os.path.join(kbdir, "notes.md"))
    os.mkfifo(os.path.join(kbdir, "notes.md"))
elif mode == "keywords":
    os.mkfifo(os.path.join(kbdir, "notes.keywords.json"))
else:
    os.unlink(os.path.join(kbdir, "notes.md"))
    os.mkfifo(os.path.join(kbdir, "notes.md"))
out = {}
for step in ("sync", "add", "update"):
    try:
        res = getattr(handle, step)(*(() if step == "sync" else (os.path.join(kbdir, "notes.md"),)))
        out[step] = {"ok": True, "errors": [e["file"] for e in res.get("errors", [])]}
    except KbError as exc:
        out[step] = {"ok": False, "code": exc.code, "message": exc.message}
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode", ["fifo", "keywords", "update"])
def test_a_fifo_named_like_a_kb_file_never_blocks(tmp_path, mode):
    import subprocess

    proc = subprocess.run([sys.executable, "-c", _FIFO_SCRIPT, str(tmp_path), mode], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sync"]["ok"] and ("notes.keywords.json" if mode == "keywords" else "notes.md") in out["sync"]["errors"]
    assert not out["add"]["ok"] and out["add"]["code"] in ("invalid_input", "not_found")
    assert "FIFO" in out["add"]["message"] or "regular file" in out["add"]["message"]
    if mode == "update":
        assert not out["update"]["ok"] and "regular file" in out["update"]["message"]


def test_add_of_a_symlink_loop_says_so(small):
    handle, kbdir = small
    os.symlink("loop.md", kbdir / "loop.md")
    with pytest.raises(ValidationError, match="symlink loop"):
        handle.add(str(kbdir / "loop.md"))


@pytest.mark.parametrize("step", ["add", "update", "remove"])
def test_a_non_utf8_file_name_is_refused_cleanly(small, step):
    handle, kbdir = small
    (kbdir / BAD_NAME).write_bytes(b"# Bad\n\ntext\n")
    with pytest.raises(ValidationError, match="not valid UTF-8") as info:
        getattr(handle, step)(str(kbdir / BAD_NAME))
    json.dumps(info.value.message).encode("utf-8")  # the message itself is clean text
    assert "\\xff" in info.value.message
