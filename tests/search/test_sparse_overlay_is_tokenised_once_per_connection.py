"""Documents a sync wrote but has not folded into the sparse index yet are read with every question until the
fold. A connection keeps its tokenizer between questions, so only the first question after such a write asks
SQLite to tokenise their words; the next ones (in an MCP server, a chat, a team's agents) do not, and every
question still scores like FTS5."""

from __future__ import annotations

import random

import pytest

from helpers import kw, write_doc
from kb_indexer.api import QueryOptions
from kb_indexer.search import fulltext, sparse

WORDS = "flow boundary layer heat transfer mach number shock wave pressure wing flutter panel".split()


@pytest.fixture
def pending_kb(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_SPARSE_MIN_DOCS", "0")
    handle, kbdir = small
    rng = random.Random(3)
    for i in range(30):
        write_doc(kbdir, f"d{i}.md", "# " + " ".join(rng.choices(WORDS, k=4)) + "\n\n" +
                  " ".join(rng.choices(WORDS, k=60)) + "\n", kw("note", "boundary layer"))
    assert handle.sync()["fulltext_index"]["built"]
    for i in range(5):   # written, not folded: the next questions read them beside the index
        (kbdir / f"d{i}.md").write_text(f"# Changed {i}\n\nzephyrine{i} quillwort{i} boundary layer\n",
                                        encoding="utf-8")
        handle.update(f"d{i}.md")
    return handle


def _tokenising(conn) -> list[str]:
    sent: list[str] = []
    conn.set_trace_callback(lambda sql: sent.append(sql) if "kb_sparse_tok" in sql else None)
    return sent


def test_the_second_question_tokenises_nothing(pending_kb):
    conn = pending_kb.conn
    options = QueryOptions(method="fulltext", record=False)
    first = pending_kb.query("zephyrine3 flutter", options=options)
    assert [r["filepath"] for r in first["results"]][:1] == ["d3.md"]
    sent = _tokenising(conn)
    try:
        second = pending_kb.query("zephyrine3 flutter", options=options)
        third = pending_kb.query("flutter zephyrine3", options=options)
    finally:
        conn.set_trace_callback(None)
    assert sent == []
    assert second["results"] == first["results"]
    assert [r["filepath"] for r in third["results"]][:1] == ["d3.md"]
    other = pending_kb.query("quillwort1 flutter", options=options)   # a new word: learned, then scored
    assert [r["filepath"] for r in other["results"]][:1] == ["d1.md"]
    view = sparse.open_view(conn, fulltext.COLUMN_WEIGHTS, ("quillwort1", "flutter"))
    assert view is not None and view.pending == 5


def test_a_new_connection_gets_its_own_tokenizer(pending_kb, tmp_path):
    from kb_indexer.api import KnowledgeBase

    pending_kb.query("flutter", options=QueryOptions(record=False))
    again = KnowledgeBase.open(pending_kb.db_path, pending_kb.kb_root)
    try:
        sent = _tokenising(again.conn)
        out = again.query("zephyrine2 flutter", options=QueryOptions(method="fulltext", record=False))
        assert [r["filepath"] for r in out["results"]][:1] == ["d2.md"]
        assert sent   # its own temp schema: it learns the words itself
    finally:
        again.close()
