"""add, update, remove, list-docs, show, sync."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, _console, emit

FileArg = Annotated[str, typer.Argument(help="Markdown file (relative to the current directory or the KB root).")]


def _warn(result: dict) -> None:
    for warning in result.get("warnings") or []:
        sys.stderr.write(f"warning: {warning}\n")


@app.command()
def add(
    file: FileArg,
    keywords: Annotated[Optional[str], typer.Option("--keywords", "-k", help="Keywords JSON file "
                        "(default: FILE's .keywords.json beside it, if any).")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Add a document (or re-read it if it is already indexed)."""
    with open_kb(db, kb) as k:
        result = k.add(file, keywords)
    _warn(result)
    emit(result, format, title="add")


@app.command()
def update(file: FileArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Re-read an indexed document and its keywords file."""
    with open_kb(db, kb) as k:
        result = k.update(file)
    _warn(result)
    emit(result, format, title="update")


@app.command()
def remove(file: FileArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Remove a document from the index (the file is left alone)."""
    with open_kb(db, kb) as k:
        emit(k.remove(file), format, title="remove")


@app.command("list-docs")
def list_docs(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """List indexed documents."""
    with open_kb(db, kb) as k:
        emit(k.list_docs(), format, rows="documents", columns=("filepath", "title", "keyword_count", "updated_at"))


@app.command()
def show(file: FileArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Show a document's details and keywords."""
    with open_kb(db, kb) as k:
        emit(k.show(file), format, title="document")


@app.command()
def sync(
    directory: Annotated[Optional[str], typer.Argument(help="Only this folder of the KB (default: all of it).")] = None,
    enrich: Annotated[bool, typer.Option("--enrich", help="Then enrich new documents without keywords and "
                                         "refresh the generated keywords of changed ones (see `kbindex "
                                         "enrich`).")] = False,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="With --enrich: the statistical extractor only.")] = False,
    llm_backend: Annotated[Optional[str], typer.Option("--llm-backend", help="With --enrich: the LLM backend "
                                                       "(as `kbindex enrich`).", show_default=False)] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Index the knowledge base incrementally: add new files, re-read changed ones, drop deleted ones."""
    with open_kb(db, kb) as k:
        if enrich:
            from kb_indexer.cli.enrich import report_documents, run_with_progress
            from kb_indexer.llm.config import LLMOptions

            result = run_with_progress("Indexing", lambda progress: k.sync_enrich(
                directory, progress, use_llm=not no_llm, llm=LLMOptions(backend=llm_backend)))
            report_documents(result["enrich"])
        elif sys.stderr.isatty():
            from rich.progress import Progress

            with Progress(transient=True, console=_console(stderr=True)) as bar:  # stdout is only the result
                task = bar.add_task("Indexing", total=None)
                result = k.sync(directory, lambda i, n: bar.update(task, completed=i, total=n))
        else:
            result = k.sync(directory)
    for err in result["errors"]:
        sys.stderr.write(f"warning: skipped {err['file']}: {err['message']}\n")
    for warning in result["warnings"]:
        sys.stderr.write(f"warning: {warning['message']}\n")
    emit(result, format, title="sync")
