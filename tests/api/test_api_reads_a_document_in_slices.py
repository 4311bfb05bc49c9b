"""``KnowledgeBase.read``: a document's indexed text in slices (what the MCP server and the chat tools read
through, instead of the store)."""

from __future__ import annotations

import pytest

from kb_indexer.errors import KbError, NotFoundError, UsageError

pytestmark = pytest.mark.both_engines

DOC = "alphago-architecture.md"


def test_the_whole_text_and_its_length(kb):
    whole = kb.read(DOC)
    assert whole["filepath"] == DOC and whole["title"] == kb.show(DOC)["title"]
    assert whole["offset"] == 0 and whole["more"] is False
    assert whole["total_chars"] == len(whole["text"]) > 200


def test_slices_put_back_together_give_the_whole_text(kb):
    whole = kb.read(DOC)["text"]
    pieces, offset = [], 0
    while True:
        part = kb.read(DOC, offset=offset, limit=100)
        assert part["total_chars"] == len(whole) and len(part["text"]) <= 100
        pieces.append(part["text"])
        offset += len(part["text"])
        if not part["more"]:
            break
    assert "".join(pieces) == whole and offset == len(whole)
    end = kb.read(DOC, offset=len(whole))
    assert end["text"] == "" and end["more"] is False


@pytest.mark.parametrize("offset,limit", [(-1, None), (True, None), ("3", None), (0, -5), (0, 2.5)])
def test_a_bad_slice_is_bad_usage(kb, offset, limit):
    with pytest.raises(UsageError):
        kb.read(DOC, offset=offset, limit=limit)


def test_an_offset_past_the_end_is_bad_usage(kb):
    total = kb.read(DOC)["total_chars"]
    with pytest.raises(UsageError, match="past the end"):
        kb.read(DOC, offset=total + 1)


def test_paths_are_refused_as_show_refuses_them(kb, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n", encoding="utf-8")
    with pytest.raises(KbError) as info:
        kb.read(str(outside))
    assert info.value.code == "outside_kb"
    with pytest.raises(NotFoundError):
        kb.read("no-such-document.md")


def test_list_docs_gives_one_page_of_the_same_order(kb):
    every = [d["filepath"] for d in kb.list_docs()["documents"]]
    pages = [kb.list_docs(offset=o, limit=4)["documents"] for o in range(0, len(every), 4)]
    assert len(every) > 8 and [d["filepath"] for page in pages for d in page] == every
    assert kb.list_docs(offset=len(every), limit=4)["documents"] == []
    with pytest.raises(UsageError):
        kb.list_docs(limit=-1)
