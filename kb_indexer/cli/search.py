"""search (exact keyword tags)."""

from __future__ import annotations

from typing import Annotated

import typer

from kb_indexer.cli.app import DbOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import warn_shown
from kb_indexer.cli.results import ResultFormat, ResultFormatOpt, emit_result
from kb_indexer.errors import UsageError
from kb_indexer.defaults import SEARCH_DEFAULT_LIMIT


@app.command(short_help="Find documents tagged with the keywords")
def search(
    keywords: Annotated[list[str], typer.Argument(help="Keywords to look for.")],
    or_: Annotated[bool, typer.Option("--or", help="Any keyword matches (default).")] = False,
    and_: Annotated[bool, typer.Option("--and", help="All keywords must match.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="At most this many results (0: all); "
                                       "the JSON's total counts every match.")] = SEARCH_DEFAULT_LIMIT,
    db: DbOpt = None, kb: KbOpt = None, format: ResultFormatOpt = ResultFormat.table,
) -> None:
    """Find documents tagged with the keywords, most matched keywords first."""
    if or_ and and_:
        raise UsageError("--or and --and are mutually exclusive")
    with open_kb(db, kb) as k:
        result = k.search(keywords, "and" if and_ else "or", limit)
    if result["total"] > result["count"] and format is not ResultFormat.json and limit == SEARCH_DEFAULT_LIMIT:
        warn_shown(result["count"], result["total"])
    emit_result(result, format, "search")
