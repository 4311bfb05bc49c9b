"""A cold ``kbindex query`` whose words have few postings is answered on FTS5 without loading numpy (~45 ms of
an agent's call), with the same results the sparse index gives; a question with many matches still uses it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import write_doc

# ``bound`` overrides the number of matches FTS5 answers alone (0: the sparse index whenever there is one)
_PROBE = """
import contextlib, io, sys
bound = int(sys.argv[1])
import kb_indexer.search.sparse as sparse
if bound >= 0:
    sparse.FTS5_CHEAPER_POSTINGS = bound
from kb_indexer.cli import main
sys.argv = ["kbindex", "query", *sys.argv[2:], "--format", "json", "--no-stale-check"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
print(out.getvalue())
print("numpy" in sys.modules)
"""


def _query(cwd, bound: int, *args: str) -> tuple[list[tuple[str, float]], bool]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(bound), *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    body, _, loaded = proc.stdout.rstrip().rpartition("\n")
    out = json.loads(body)
    return [(r["filepath"], r["relevance_score"]) for r in out["results"]], loaded == "True"


@pytest.mark.sqlite_only("the sparse full-text index is SQLite's")
def test_few_matches_skip_numpy_and_rank_as_the_sparse_index_does(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")   # the sparse index on a small knowledge base
    kb, kbdir = small
    for i in range(40):
        write_doc(kbdir, f"n{i:02d}.md", f"# Note {i}\n\nCommon words about boundary layers and heat, note {i}. "
                  + ("A rare zubelquigre valve appears here. " if i % 7 == 0 else "")
                  + ("Zubelquigre again, and the valve again. " if i % 14 == 0 else ""))
    assert kb.sync()["errors"] == []
    assert kb.db_stats()["fulltext_index"]["documents"] == 40
    cwd = kb.db_path.parent
    for question in (["zubelquigre valve"], ["boundary layers heat"], ["-k", "zubelquigre"]):
        on_fts5, numpy_loaded = _query(cwd, -1, *question)
        assert not numpy_loaded, question
        on_sparse, numpy_loaded = _query(cwd, 0, *question)
        assert numpy_loaded, question
        assert on_fts5 == on_sparse and on_fts5, question
