"""Big and hostile documents: indexed up to the size limit with a warning, parsed in linear time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import fulltext_bodies, kw, write_doc
from kb_indexer.errors import ValidationError
from kb_indexer.index.markdown import parse_markdown, read_document_text


def test_a_document_over_the_limit_is_indexed_up_to_it_with_a_warning(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "4096")
    handle, kbdir = small
    write_doc(kbdir, "big.md", "# Big\n\n" + "alpha " * 1000 + "\n\nomegatail\n")  # ~6 KB
    res = handle.sync()
    assert res["added"] == 1 and res["errors"] == []
    assert [w["file"] for w in res["warnings"]] == ["big.md"]
    assert "4096 bytes" in res["warnings"][0]["message"]
    body = fulltext_bodies(handle.conn)["big.md"]
    assert len(body.encode()) <= 4096 and "omegatail" not in body
    assert handle.sync()["unchanged"] == 1  # not re-read again and again


def test_the_cut_never_splits_a_character(tmp_path, monkeypatch):
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "1024")
    path = tmp_path / "u.md"
    path.write_text("é" * 2000, encoding="utf-8")  # 2 bytes each: byte 1024 is a character boundary...
    text, raw, warning = read_document_text(path)
    assert warning and len(raw) == 1024 and text == "é" * 512
    path.write_text("a" + "é" * 2000, encoding="utf-8")  # ...and here it is not
    text, raw, warning = read_document_text(path)
    assert warning and text == "a" + "é" * 511


def test_add_reports_the_size_warning(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "2048")
    handle, kbdir = small
    path = write_doc(kbdir, "big.md", "# Big\n\n" + "word " * 1000)
    res = handle.add(str(path))
    assert res["action"] == "added" and len(res["warnings"]) == 1


def test_a_keywords_file_over_the_limit_is_refused(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "2048")
    handle, kbdir = small
    write_doc(kbdir, "a.md", "# A\n\ntext\n", kw("s" * 5000, "k"))
    res = handle.sync()
    assert res["added"] == 1 and "larger than 2048 bytes" in res["errors"][0]["message"]  # a.md, without it
    assert res["errors"][0]["file"] == "a.keywords.json" and handle.keywords("a.md")["keywords"] == []


def test_a_bad_limit_setting_is_a_clear_error(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "lots")
    handle, kbdir = small
    path = write_doc(kbdir, "a.md", "# A\n\ntext\n")
    with pytest.raises(ValidationError, match="KBINDEX_MAX_DOC_BYTES"):
        handle.add(str(path))


@pytest.mark.parametrize("line,title", [("# Title #", "Title"), ("# C#", "C#"), ("#   spaced   ", "spaced"),
                                        ("# #", "#"), ("#nospace", None)])
def test_title_lines(line, title):
    assert parse_markdown(line + "\n\ntext\n").title == title


_HOSTILE = r"""
import sys
from kb_indexer.index.markdown import parse_markdown
n = 300_000
for text in ("*a " * n, "_a " * n, "`a " * n, "# a" + " " * n + "b", "[" * n, "[a](" * n, "**" * n,
             "# t\n" + "## h\n" * n, "x\n" * n, "- " * n):
    parsed = parse_markdown(text)
print("ok")
"""


def test_hostile_markdown_is_parsed_in_linear_time():
    """Lines of unclosed emphasis, links or code spans, a heading with 300k spaces: each of these took
    minutes to hours with backtracking patterns; the subprocess timeout is only a hang guard."""
    proc = subprocess.run([sys.executable, "-c", _HOSTILE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_inline_markup_is_still_removed_from_titles_and_summaries():
    parsed = parse_markdown("# The **bold** and `code` [link](http://x)\n\nSome *emphasised* _text_ here.\n")
    assert parsed.title == "The bold and code link"
    assert parsed.summary == "Some emphasised text here."
    assert json.dumps(parsed.summary)


def test_a_similarities_file_is_not_held_to_the_document_limit(small, monkeypatch):
    monkeypatch.setenv("KBINDEX_MAX_DOC_BYTES", "2048")
    handle, kbdir = small
    sims = [{"keyword1": f"term {i}", "keyword2": f"other {i}", "type": "related_concept",
             "context": "x" * 40, "score": 0.5} for i in range(100)]
    (kbdir.parent / "similarities.json").write_text(json.dumps({"similarities": sims}), encoding="utf-8")
    assert (kbdir.parent / "similarities.json").stat().st_size > 2048
    res = handle.sync()
    assert res["errors"] == [] and res["similarities"]["files"] == 1
    assert handle.conn.execute("SELECT count(*) FROM keyword_similarities").fetchone()[0] == 100
