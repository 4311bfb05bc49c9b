"""A sync folds the sparse index with a helper process reading two of every three batches (large syncs): the index
it builds holds exactly the postings, lengths and pairs an in-process fold builds, and answers like FTS5."""

from __future__ import annotations

import random

import pytest
from contextlib import contextmanager
from typing import Any, Iterator

from helpers import kw, write_doc
from kb_indexer.index.reader import helper_process
from kb_indexer.store import sparse as store
from test_sparse_index_scores_like_fts5 import KEYWORDS, _all_term_lists, _assert_same_as_fts5, _text


def _live(conn) -> tuple[dict[str, list[tuple[int, float]]], list[int], list[tuple[str, int]]]:
    """Every term's live postings (document, weighted frequency), the lengths per document, the pairs."""
    st = store.load_state(conn)
    postings: dict[str, list[tuple[int, float]]] = {}
    for term, seg, data in conn.execute("SELECT term, segment, data FROM sparse_postings"):
        docs, tfs = store.unpack(data)
        postings.setdefault(term, []).extend((int(d), float(f)) for d, f in zip(docs, tfs) if st.owner[d] == seg)
    pairs = [(p, 1) for (p,) in conn.execute("SELECT pair FROM sparse_pairs ORDER BY pair")]
    return {t: sorted(p) for t, p in postings.items() if p}, st.lengths.tolist(), pairs


@pytest.mark.sqlite_only("the sparse index (SQLite's sparse_state tables)")
def test_a_fold_with_a_helper_process_equals_one_in_this_process(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")
    monkeypatch.setattr(store, "FOLD_DOCS", 7)   # 60 documents: several batch pairs, one batch alone at the end
    handle, kbdir = small
    rng = random.Random(11)
    for i in range(60):
        body = "\n\n".join(_text(rng, rng.randint(20, 80)) for _ in range(3))
        write_doc(kbdir, f"f{i % 3}/d{i}.md", f"# {_text(rng, 4)}\n\n{body}\n", kw(_text(rng, 8), *rng.sample(KEYWORDS, 3)))
    handle.sync()
    conn = handle.conn
    submitted: list[Any] = []

    @contextmanager
    def counted() -> Iterator[Any]:
        with helper_process() as pool:
            class Counting:
                def submit(self, fn, /, *args):
                    submitted.append(len(args[1]))
                    return pool.submit(fn, *args)
            yield Counting()

    conn.execute("DELETE FROM sparse_state")   # rebuilt from every document: in this process ...
    alone = store.refresh(conn)
    in_process = _live(conn)
    conn.execute("DELETE FROM sparse_state")   # ... and with the helper
    helped = store.refresh(conn, helper=counted)
    assert sum(submitted) >= 24 and helped["folded"] == alone["folded"] == 60
    assert _live(conn) == in_process and in_process[0]
    for terms in _all_term_lists(conn):
        _assert_same_as_fts5(conn, terms)
