"""Titles and summaries parsed from markdown keep identifiers and strip only emphasis."""

from __future__ import annotations

import pytest

from kb_indexer.index.markdown import parse_markdown


# -- 4. titles and summaries keep identifiers ------------------------------------------------------------

@pytest.mark.parametrize("line,title", [
    ("# parse_args and snake_case_name", "parse_args and snake_case_name"),
    ("# 2*3 is 6", "2*3 is 6"),
    ("# C#", "C#"),
    ("# Using F# and C# #", "Using F# and C#"),
    ("# Title ##", "Title"),
    ("# **Bold** and _em_ and *it* and __strong__", "Bold and em and it and strong"),
    ("# `__init__` vs `a*b`", "__init__ vs a*b"),
    ("# x ** y and _private_var", "x ** y and _private_var"),
])
def test_title_keeps_identifiers_and_strips_only_emphasis(line, title):
    assert parse_markdown(line + "\n\nbody\n").title == title


def test_summary_keeps_identifiers():
    parsed = parse_markdown("# T\n\nCall **parse_args()** with `max_len` = 2*3 and *snake_case_name*.\n")
    assert parsed.summary == "Call parse_args() with max_len = 2*3 and snake_case_name."
