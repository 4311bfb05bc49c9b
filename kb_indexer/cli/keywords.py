"""keywords, docs, stats."""

from __future__ import annotations

from typing import Annotated

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, emit

KeywordArg = Annotated[str, typer.Argument(help="A keyword (case-insensitive).")]


@app.command(short_help="List a document's keywords")
def keywords(file: Annotated[str, typer.Argument(help="An indexed document.")],
             db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """List a document's keywords."""
    with open_kb(db, kb) as k:
        emit(k.keywords(file), format, rows="keywords", columns=("keyword", "category", "source"))


@app.command(short_help="List the documents tagged with a keyword")
def docs(keyword: KeywordArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """List the documents tagged with a keyword."""
    with open_kb(db, kb) as k:
        emit(k.docs(keyword), format, rows="documents", columns=("filepath", "title", "category"))


@app.command(short_help="A keyword's documents and related keywords")
def stats(keyword: KeywordArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Document count and related-keyword count of a keyword."""
    with open_kb(db, kb) as k:
        emit(k.stats(keyword), format, title="keyword")
