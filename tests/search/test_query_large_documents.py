"""A query over very large documents stays linear: snippets come from a bounded scan, not FTS5's snippet()."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import write_doc
from kb_indexer.search import fulltext
from kb_indexer.search.fulltext import bounded_snippet
from kb_indexer.api import QueryOptions


def test_a_2mb_document_full_of_the_query_words_gets_a_short_right_snippet(small):
    handle, kbdir = small
    body = "reinforcement learning games " * 70_000           # ~2 MB, every word a match
    write_doc(kbdir, "huge.md", "# Huge\n\n" + body + "\n\nthe end\n")
    write_doc(kbdir, "small.md", "# Small\n\nA note on reinforcement learning for board games.\n")
    handle.sync()
    out = handle.query("reinforcement learning games", options=QueryOptions(record=False))
    by_path = {r["filepath"]: r for r in out["results"]}
    assert set(by_path) == {"huge.md", "small.md"}
    snippet = by_path["huge.md"]["snippet"]
    assert "**reinforcement**" in snippet and "**learning**" in snippet and "**games**" in snippet
    assert len(snippet) < 400
    assert "**reinforcement** **learning**" in by_path["small.md"]["snippet"]  # FTS5's own snippet


@pytest.mark.sqlite_only("FTS5's snippet() (on PostgreSQL every snippet is the bounded scan)")
def test_only_large_bodies_leave_fts5_snippet(small, monkeypatch):
    handle, kbdir = small
    monkeypatch.setattr(fulltext, "SNIPPET_FTS_MAX_CHARS", 100)
    calls = []
    real = fulltext.bounded_snippet
    monkeypatch.setattr(fulltext, "bounded_snippet", lambda *a, **k: calls.append(1) or real(*a, **k))
    write_doc(kbdir, "long.md", "# Long\n\n" + "filler words here " * 20 + "quantum computing note\n")
    write_doc(kbdir, "short.md", "# Short\n\nquantum computing\n")
    handle.sync()
    out = handle.query("quantum computing", options=QueryOptions(record=False))
    assert len(out["results"]) == 2 and len(calls) == 1
    assert all("**quantum**" in r["snippet"] for r in out["results"])


def test_the_snippet_scan_is_bounded():
    text = "x " * 10 + " ".join(["match"] * 1_000_000)
    assert bounded_snippet(text, ("match",)).count("**match**") < 40
    assert bounded_snippet("a" * 1_000_000 + " learn", ("learning",)).endswith("**learn**")
    assert bounded_snippet("nothing here", ("absent",)) == ""
    assert bounded_snippet("anything", ("!!",)) == ""


_HANG_GUARD = r"""
import sys
from kb_indexer.api import KnowledgeBase, QueryOptions
root = sys.argv[1]
import os
os.makedirs(root + "/kb")
open(root + "/kb/big.md", "w").write("# Big\n\n" + "alpha beta gamma " * 120_000)
h, _ = KnowledgeBase.init(root + "/i.db", root + "/kb")
h.sync()
for method in ("hybrid", "keyword", "fulltext"):
    h.query("alpha beta gamma", ["alpha"] if method == "keyword" else None, QueryOptions(method=method, record=False))
print("ok")
"""


def test_queries_over_a_2mb_document_finish(tmp_path):
    """Before: 60 s for a 2 MB document (FTS5 snippet() is quadratic in matches); the timeout is a hang guard."""
    proc = subprocess.run([sys.executable, "-c", _HANG_GUARD, str(tmp_path / "p")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
