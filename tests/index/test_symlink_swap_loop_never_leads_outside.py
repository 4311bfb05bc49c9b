"""The attack as the reviewer ran it, bounded: a thread exchanges a folder of the knowledge base with a
symlink to an outside folder (``renameat2(RENAME_EXCHANGE)``, atomic) in a loop while kbindex reads a
keywords file in it, or writes one there, 1,000 times. Every read gets the file inside the root or is
refused, never the outside file's content; every write lands inside the root or is refused, and no
temporary file is left anywhere. Linux only (renameat2)."""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading

import pytest

from kb_indexer.beneath import cached_folders
from kb_indexer.errors import ValidationError
from kb_indexer.index.files import load_keywords_file
from kb_indexer.safe_write import write_atomic

ROUNDS = 1000
RENAME_EXCHANGE = 2
AT_FDCWD = -100

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")


@pytest.fixture
def swapping(tmp_path):
    """(root, outside): ``root/notes`` and the symlink ``root/swap`` (to ``outside``) trade places in a loop."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("no renameat2 in this C library")
    root, outside = tmp_path / "kb", tmp_path / "outside"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.keywords.json").write_text(json.dumps({"from": "inside"}), encoding="utf-8")
    outside.mkdir()
    (outside / "a.keywords.json").write_text(json.dumps({"from": "outside"}), encoding="utf-8")
    (root / "swap").symlink_to(outside, target_is_directory=True)
    stop = threading.Event()
    a, b = bytes(root / "notes"), bytes(root / "swap")

    def swap() -> None:
        while not stop.is_set():
            libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    yield root, outside
    stop.set()
    thread.join()


@pytest.mark.parametrize("per_scope", [1, 16], ids=["one read", "a sync's reads of 16 files"])
def test_reads_during_a_swap_loop_never_return_the_outside_file(swapping, per_scope):
    root, _ = swapping
    seen = set()
    for _ in range(ROUNDS // per_scope):
        with cached_folders():  # as a sync reads: a folder is opened once for the files read together
            for _ in range(per_scope):
                try:
                    seen.add(load_keywords_file(root, root / "notes" / "a.keywords.json", "a.keywords.json")[0]["from"])
                except ValidationError as exc:
                    assert exc.code == "outside_kb"
    assert "outside" not in seen


def test_writes_during_a_swap_loop_never_land_outside_nor_leave_a_temporary_file(swapping):
    root, outside = swapping
    for i in range(ROUNDS):
        try:
            write_atomic(root / "notes" / f"d{i}.keywords.json", "{}\n", root=root)
        except ValidationError as exc:
            assert exc.code == "outside_kb"
    assert sorted(os.listdir(outside)) == ["a.keywords.json"]
    assert [p for p in root.rglob("*.tmp")] == []
