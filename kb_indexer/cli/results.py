"""The result formats of query, search and refine: JSON, a table, or a markdown block for a prompt.

A module of its own so ``kbindex search`` (an agent's most frequent call) imports no query code.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Mapping

import typer

from kb_indexer.cli.output import echo, emit


class ResultFormat(str, Enum):
    json = "json"
    table = "table"
    markdown = "markdown"


ResultFormatOpt = Annotated[ResultFormat, typer.Option(
    "--format", "-f", case_sensitive=False,
    help="json (for agents), table, or markdown (a block to inject into a prompt).")]

RESULT_COLUMNS = ("relevance_score", "filepath", "title", "sources", "matched_keywords")


def emit_result(data: Mapping[str, Any], fmt: ResultFormat, kind: str) -> None:
    """JSON, table or the markdown context-injection block (``kind``: query or search)."""
    if fmt is ResultFormat.markdown:
        from kb_indexer.api import render_query, render_search  # lazy: markdown output only (kbindex search)

        echo((render_query if kind == "query" else render_search)(data))
        return
    columns = RESULT_COLUMNS if kind == "query" else ("filepath", "title", "matched_keywords", "user_keywords")
    emit(data, fmt.value, rows="results", columns=columns)
