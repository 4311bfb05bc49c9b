"""The result formats of query, search and refine: JSON, a table, or a markdown block for a prompt.

A module of its own so ``kbindex search`` (an agent's most frequent call) imports no query code.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Mapping

import typer

from kb_indexer.cli.output import echo, emit, table_width


class ResultFormat(str, Enum):
    json = "json"
    table = "table"
    markdown = "markdown"


ResultFormatOpt = Annotated[ResultFormat, typer.Option(
    "--format", "-f", case_sensitive=False,
    help="json (for agents), table, or markdown (a block to inject into a prompt).")]

RESULT_COLUMNS = ("relevance_score", "filepath", "title", "sources", "matched_keywords")
SEARCH_COLUMNS = ("filepath", "title", "matched_keywords", "user_keywords")
#: What the JSON has for agents and a table leaves out: per-source counts (the sources column shows them per result)
#: and the attempt's id (`refine` and `feedback` take the query id, which the table shows).
JSON_ONLY = ("keyword_search_count", "grep_search_count", "semantic_search_count", "attempt_id")
PARTS_WIDTH = 50             # what the --explain column needs of the width
NARROW, MEDIUM = 100, 140   # terminal columns below which the table leaves columns out (the JSON has all)


def emit_result(data: Mapping[str, Any], fmt: ResultFormat, kind: str) -> None:
    """JSON, table or the markdown context-injection block (``kind``: query or search)."""
    if fmt is ResultFormat.markdown:
        from kb_indexer.api import render_query, render_search  # lazy: markdown output only (kbindex search)

        echo((render_query if kind == "query" else render_search)(data))
        return
    columns: tuple[str, ...] = RESULT_COLUMNS if kind == "query" else SEARCH_COLUMNS
    results = data.get("results") or []
    parts = fmt is ResultFormat.table and any("score_parts" in r for r in results)   # --explain: the parts too
    if fmt is ResultFormat.table:   # a narrow terminal: fewer columns, so that paths are not cut mid-word
        width = table_width() - (PARTS_WIDTH if parts else 0)
        drop = {"title"} if width < MEDIUM else set()
        if width < NARROW and kind == "query":
            drop.add("matched_keywords")
        columns = tuple(c for c in columns if c not in drop)
    if parts:
        data = {**data, "results": [{**r, "score_parts": parts_text(r["score_parts"])} for r in results]}
        columns = (*columns, "score_parts")
    if fmt is ResultFormat.table:
        data = {k: v for k, v in data.items() if k not in JSON_ONLY}
    emit(data, fmt.value, rows="results", columns=columns)


def parts_text(parts: Mapping[str, Any]) -> str:
    """A result's score parts on one line, as they add up: "(keyword 0.6 x 1.000 + fulltext 0.4 x 0.893 + learned
    0.082) / scale 1.082 + neighbours 0.010"."""
    weights = parts.get("weights") or {}
    terms = [f"{c} {weights[c]:g} x {parts.get(c, 0.0):.3f}" for c in ("keyword", "fulltext", "dense")
             if weights.get(c)]
    if parts.get("learned"):
        terms.append(f"learned {parts['learned']:.3f}")
    text = " + ".join(terms) or "0"
    if parts.get("scale", 1.0) != 1.0:
        text = f"({text}) / scale {parts['scale']:.3f}"
    if "neighbours" in parts:
        text += f" + neighbours {parts['neighbours']:.3f}"
    return text
