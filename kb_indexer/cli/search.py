"""search (exact keyword tags)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, KbOpt, app, open_kb
from kb_indexer.cli.query import ResultFormat, ResultFormatOpt, emit_result
from kb_indexer.errors import UsageError


@app.command()
def search(
    keywords: Annotated[list[str], typer.Argument(help="Keywords to look for.")],
    or_: Annotated[bool, typer.Option("--or", help="Any keyword matches (default).")] = False,
    and_: Annotated[bool, typer.Option("--and", help="All keywords must match.")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=1, help="At most this many results.")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: ResultFormatOpt = ResultFormat.table,
) -> None:
    """Find documents tagged with the keywords, most matched keywords first."""
    if or_ and and_:
        raise UsageError("--or and --and are mutually exclusive")
    with open_kb(db, kb) as k:
        emit_result(k.search(keywords, "and" if and_ else "or", limit), format, "search")
