"""init, export, import, db-stats."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, emit, json_out, warn
from kb_indexer.errors import ValidationError
from kb_indexer.limits import parse_json


@app.command(short_help="Create the index, or upgrade it in place")
def init(
    db: DbOpt = None, kb: KbOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Add kbindex's tables even to a SQLite file that holds "
                                        "another application's tables; point an index holding documents at "
                                        "another --kb (everyone who uses it follows).")] = False,
    format: FormatOpt = Format.table,
) -> None:
    """Create the index (or upgrade an existing one in place)."""
    from kb_indexer.api import KnowledgeBase  # lazy: the API, when init runs (--help imports every command module)

    handle, result = KnowledgeBase.init(db, kb, force=force)
    handle.close()
    if not result["kb_root_exists"]:
        warn(f"knowledge-base root {result['kb_root']} does not exist yet")
    emit(result if format is Format.json else _init_view(result), format, title="kbindex init")


def _init_view(result: Mapping[str, Any]) -> dict[str, Any]:
    """The table's view of init's result: the schema as a person reads it, up to date and how many migrations
    this run applied (their names are the index's internals: the JSON lists them)."""
    view = {k: v for k, v in result.items() if k != "migrations_applied"}
    n = len(result.get("migrations_applied") or [])
    view["schema"] = "up to date" + (f" ({n} migration{'s' * (n != 1)} applied)" if n else "")
    return view


@app.command(short_help="Export the index as JSON, a backup")
def export(
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.json,
) -> None:
    """Export the index (documents, keywords, similarities, learned items, history, feedback; not chat sessions) as
    JSON. With --format table: a table of the rows per table (written with --output FILE)."""
    table = format is Format.table
    with open_kb(db, kb) as k:
        if output is None and not table:
            with json_out() as out:
                k.export_to(out)
            return
        if output is not None:
            with json_out(output) as out:   # written as the rows are read: memory stays small
                counts = k.export_to(out)
        else:
            counts = k.export_counts()
    if not table:
        emit({"output": str(output), "tables": counts}, format, title="export")
        return
    if output is None:
        warn("nothing written: the export is JSON (--output FILE writes it, --format json prints it)")
    emit({"tables": [{"table": t, "rows": n} for t, n in counts.items()], "output": str(output) if output else None},
         format, rows="tables", title="export" if output else "export (not written)")


@app.command("import", short_help="Replace the index content with an export")
def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `kbindex export` (- for stdin).")],
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty index.")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Replace the index content with an export (all or nothing)."""
    data = None
    if str(file) == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"stdin is not UTF-8 text (byte {exc.start})") from None
        data = parse_json(text, str(file))
    with open_kb(db, kb) as k:
        result = k.import_(data, force=force) if data is not None else k.import_file(file, force=force)
    emit(result, format, title="import")


@app.command("db-stats", short_help="Counts of documents, keywords, queries, feedback")
def db_stats(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Counts of documents, keywords, similarities, queries and feedback."""
    with open_kb(db, kb) as k:
        emit(k.db_stats(), format, title="kbindex database")
