"""The packed vectors' file beside the index (``<index>.vectors/``), which a cold query maps into memory:
written on first use, never used when stale or damaged, replaced when the vectors change, and optional
(a folder that cannot be written only means the BLOB is read)."""

from __future__ import annotations

import os

import pytest

from tests.helpers import write_doc
from tests.embed.test_semantic_search import FAKE, corpus as _corpus  # noqa: F401  (the four-document corpus)
from kb_indexer.api import QueryOptions


@pytest.fixture
def corpus(_corpus):
    kb, root = _corpus
    kb.embeddings.embed(embed=FAKE)
    return kb, root


def _files(kb):
    folder = kb.db_path.parent / (kb.db_path.name + ".vectors")
    return sorted(folder.glob("*.f32")) if folder.is_dir() else []


def _top(kb, question="car"):
    out = kb.query(question, options=QueryOptions(method="semantic", record=False))
    return [(r["filepath"], r["similarity"]) for r in out["results"]]


def test_the_first_query_writes_the_file_and_the_next_maps_it(corpus):
    kb, _ = corpus
    first = _top(kb)
    files = _files(kb)
    assert len(files) == 1 and files[0].stat().st_size == 4 * 64 * 4   # 4 one-chunk documents, 64 dims
    from kb_indexer.store import vectors
    model = vectors.latest_model(kb.conn)
    doc_ids, matrix, rebuilt = vectors.load_matrix(kb.conn, model)
    assert type(matrix).__name__ == "memmap" and not rebuilt
    assert _top(kb) == first and first[0][0] == "engines.md"


def test_changed_vectors_never_use_the_old_file(corpus):
    kb, root = corpus
    _top(kb)
    old = _files(kb)
    write_doc(root, "gardens.md", "# Gardens\n\nA vehicle garage, not a garden: cars parked in rows.\n")
    kb.sync()
    kb.embeddings.embed(embed=FAKE)
    top = _top(kb)
    assert top[0][0] in ("engines.md", "gardens.md") and "gardens.md" in [p for p, _ in top[:2]]
    new = _files(kb)
    assert len(new) == 1 and new != old                     # the stale file was replaced, not reused


def test_a_damaged_file_is_ignored_and_rewritten(corpus):
    kb, _ = corpus
    expected = _top(kb)
    (path,) = _files(kb)
    path.write_bytes(path.read_bytes()[:100])               # truncated: wrong size
    assert _top(kb) == expected
    assert _files(kb)[0].stat().st_size == 4 * 64 * 4


def test_a_folder_that_cannot_be_written_only_means_the_blob_is_read(corpus):
    kb, _ = corpus
    folder = kb.db_path.parent / (kb.db_path.name + ".vectors")
    folder.write_text("a file where the folder would be")  # mkdir fails like a read-only directory would
    assert _top(kb)[0][0] == "engines.md"
    assert folder.is_file()


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root ignores permissions")
def test_a_read_only_folder_still_answers(corpus):
    kb, _ = corpus
    folder = kb.db_path.parent / (kb.db_path.name + ".vectors")
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert _top(kb)[0][0] == "engines.md" and _files(kb) == []
    finally:
        folder.chmod(0o700)
