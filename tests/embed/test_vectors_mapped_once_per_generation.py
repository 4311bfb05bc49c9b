"""A long-lived process (MCP server, chat) maps a model's vectors file once per generation: a query after the
vectors changed reads the new ones, and one on another index file never sees the first one's."""

from __future__ import annotations

import pytest

from kb_indexer.llm.config import EmbedOptions
from kb_indexer.store import vectors
from tests.helpers import write_doc
from kb_indexer.api import QueryOptions

FAKE = EmbedOptions(backend="fake-embed")


def _hybrid(kb, question: str) -> list[str]:
    out = kb.query(question, options=QueryOptions(method="semantic", record=False), embed=FAKE)
    assert out["query"]["fallback"] is None
    return [r["filepath"] for r in out["results"]]


@pytest.mark.sqlite_only("the vectors file beside the .db file (a server's vectors stay on the server)")
def test_new_vectors_are_read_after_an_embed_in_the_same_process(small):
    kb, root = small
    write_doc(root, "a.md", "# Roses\n\nRoses and tulips in the garden.\n")
    write_doc(root, "b.md", "# Bread\n\nFlour and yeast make bread.\n")
    kb.sync()
    kb.embeddings.embed(embed=FAKE)
    for _ in range(3):   # packs the matrix, writes the vectors file, then maps it
        assert _hybrid(kb, "tulips")[0] == "a.md"
    assert len(vectors._MAPPED) == 1
    first = next(iter(vectors._MAPPED))
    write_doc(root, "b.md", "# Bread\n\nTulips, tulips and tulips in the bakery window.\n")
    kb.sync()
    kb.embeddings.embed()
    for _ in range(3):
        assert _hybrid(kb, "tulips")[0] == "b.md"   # the changed vectors, not the mapped ones
    assert next(iter(vectors._MAPPED)) != first and len(vectors._MAPPED) == 1


def test_another_index_file_is_mapped_on_its_own(small, tmp_path):
    from kb_indexer.api import KnowledgeBase

    kb, root = small
    write_doc(root, "a.md", "# Roses\n\nRoses and tulips in the garden.\n")
    kb.sync()
    kb.embeddings.embed(embed=FAKE)
    for _ in range(3):
        assert _hybrid(kb, "roses") == ["a.md"]
    other_root = tmp_path / "other" / "knowledge-base"
    other_root.mkdir(parents=True)
    write_doc(other_root, "z.md", "# Roses elsewhere\n\nRoses in another knowledge base.\n")
    other, _ = KnowledgeBase.init(tmp_path / "other" / "kbindex.db", other_root)
    try:
        other.sync()
        other.embeddings.embed(embed=FAKE)
        for _ in range(3):
            assert _hybrid(other, "roses") == ["z.md"]
            assert _hybrid(kb, "roses") == ["a.md"]
    finally:
        other.close()
