"""A POSIX file name may hold a backslash (`a\\b.md`), and sync indexes it: the keywords file `enrich` writes for it
is read back by the next sync, and an export of the index imports again (both refused it: a backslash was taken
for a Windows separator only)."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = [pytest.mark.both_engines,
              pytest.mark.skipif(os.sep == "\\", reason="a backslash is a separator on Windows")]

NAME = "a\\b.md"


def test_enrich_then_sync_then_export_and_import(small, tmp_path):
    kb, root = small
    (root / NAME).write_text("# Backslash note\n\nRetry policy with exponential backoff and jitter for "
                             "flaky network calls.\n", encoding="utf-8")
    (root / "other.md").write_text("# Other\n\nunrelated\n", encoding="utf-8")
    assert kb.sync()["errors"] == []
    kb.enrich.documents(all_=True, use_llm=False)
    written = json.loads((root / "a\\b.keywords.json").read_text(encoding="utf-8"))
    assert written["filepath"] == NAME and written["keywords"]
    result = kb.sync()
    assert result["errors"] == []
    generated = {k["keyword"] for k in kb.keywords(NAME)["keywords"]}
    assert generated >= {k.lower() for k in written["keywords"][:1]}
    dump = kb.export()
    from kb_indexer.api import KnowledgeBase

    other, _ = KnowledgeBase.init(tmp_path / "copy.db", root)
    try:
        other.import_(dump)
        assert other.show(NAME)["title"] == "Backslash note"
    finally:
        other.close()


def test_a_keywords_file_still_names_a_windows_path_with_backslashes():
    from kb_indexer.index.loader import describes

    assert describes("sub\\doc.md", "sub/doc.md") and describes("./sub\\doc.md", "sub/doc.md")
    assert describes("a\\b.md", "a\\b.md") and not describes("a\\b.md", "c.md")
