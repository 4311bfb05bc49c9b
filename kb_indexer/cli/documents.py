"""add, update, remove, list-docs, show, sync, embed."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, EmbedBackendOpt, EmbedModelOpt, FormatOpt, KbOpt, app, embed_options, open_kb
from kb_indexer.cli.output import Format, _console, emit, report_documents, warn
from kb_indexer.llm.config import LLMOptions

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

FileArg = Annotated[str, typer.Argument(help="Markdown file (relative to the current directory or the KB root).")]


def _warn(result: Mapping[str, Any]) -> None:
    for warning in (result.get("warnings") or []) + (result.get("errors") or []):
        warn(warning)


@app.command(short_help="Add a document, or re-read it")
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


@app.command(short_help="Re-read an indexed document and its keywords file")
def update(file: FileArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Re-read an indexed document and its keywords file."""
    with open_kb(db, kb) as k:
        result = k.update(file)
    _warn(result)
    emit(result, format, title="update")


@app.command(short_help="Remove a document from the index (not the file)")
def remove(file: FileArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Remove a document from the index (the file is left alone: while it is in the knowledge base, the next
    `sync` indexes it again)."""
    with open_kb(db, kb) as k:
        emit(k.remove(file), format, title="remove")


@app.command("list-docs", short_help="List the indexed documents")
def list_docs(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """List indexed documents."""
    with open_kb(db, kb) as k:
        emit(k.list_docs(), format, rows="documents", columns=("filepath", "title", "keyword_count", "updated_at"))


@app.command(short_help="A document's details and keywords")
def show(file: FileArg, db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Show a document's details and keywords."""
    with open_kb(db, kb) as k:
        emit(k.show(file), format, title="document")


class _Progress:
    """Progress callbacks on stderr (stdout is only the result): a bar in a terminal, else (for embedding,
    which can take long) a line every few seconds."""

    def __init__(self, bar: Progress | None = None):
        self.bar = bar
        self.task: TaskID | None = None
        self.last = 0.0

    def callback(self, label: str, lines: bool = True) -> Callable[[int, int], None] | None:
        bar = self.bar
        if bar is not None:
            def update(i: int, n: int) -> None:
                if self.task is None:
                    self.task = bar.add_task(label, total=n)
                bar.update(self.task, description=label, completed=i, total=n)
            return update
        if not lines:
            return None

        def line(i: int, n: int) -> None:
            now = time.monotonic()
            if n and i and (i == n or now - self.last >= 5):
                self.last = now
                sys.stderr.write(f"{label}: {i}/{n} documents\n")
                sys.stderr.flush()
        return line


@contextmanager
def _progress() -> Iterator[_Progress]:
    if not sys.stderr.isatty():
        yield _Progress()
        return
    from rich.progress import Progress  # lazy: rich, only for a progress bar on a terminal

    with Progress(transient=True, console=_console(stderr=True)) as bar:
        yield _Progress(bar)


@app.command(short_help="Index new and changed files, drop deleted ones")
def sync(
    directory: Annotated[Optional[str], typer.Argument(help="Only this folder of the KB (default: all of it).")] = None,
    embed: Annotated[bool, typer.Option("--embed", help="Then embed the documents that changed (see "
                                        "`kbindex embed`); an embedding failure is a warning.")] = False,
    embed_backend: EmbedBackendOpt = None, embed_model: EmbedModelOpt = None,
    enrich: Annotated[bool, typer.Option("--enrich", help="Then enrich new documents without keywords and "
                                         "refresh the generated keywords of changed ones (see `kbindex "
                                         "enrich`).")] = False,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="With --enrich: the statistical extractor only.")] = False,
    llm_backend: Annotated[Optional[str], typer.Option("--llm-backend", help="With --enrich: the LLM backend "
                                                       "(as `kbindex enrich`).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Remove the indexed documents even when none of them is "
                                        "found (else refused: a wrong --kb or an unmounted folder would remove "
                                        "everything, with what was learned), and forget the relations of a "
                                        "similarities.json that is gone (else kept, with a warning).")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Index the knowledge base incrementally: add new files, re-read changed ones, drop deleted ones."""
    opts = embed_options(embed_backend, embed_model)
    with open_kb(db, kb) as k, _progress() as progress:
        embedding = progress.callback("Embedding")
        if enrich:
            result = k.enrich.sync(directory, progress.callback("Indexing", lines=False), use_llm=not no_llm,
                                   llm=LLMOptions(backend=llm_backend), embed=embed, embed_options=opts,
                                   embed_progress=embedding, force=force)
            report_documents(result.get("enrich") or {})
        else:
            result = k.sync(directory, progress.callback("Indexing", lines=False), embed=embed, embed_options=opts,
                            embed_progress=embedding, force=force)
    for err in result["errors"]:
        warn(f"{'' if err.get('indexed') else 'skipped '}{err['file']}: {err['message']}")
    for warning in result["warnings"]:
        warn(warning["message"])
    embedded: Mapping[str, Any] = result.get("embed") or {}
    if embed and embedded.get("error"):
        warn(f"embedding failed: {embedded['error']}")
    emit(result if Format(format) is Format.json else _sync_view(result), format, title="sync")


def _sync_view(result: Mapping[str, Any]) -> dict[str, Any]:
    """The table's view of sync's result (the JSON has it all): errors and warnings as counts (each is printed on
    stderr), one "old -> new" per rename, the similarities files, embedding and enrichment in a few words; a row
    with nothing in it, and the count of batches (how the writes were split), left out."""
    view: dict[str, Any] = {}
    for key, value in result.items():
        if key in ("errors", "warnings", "renames", "batches") and not value:
            continue
        if key in ("errors", "warnings"):
            view[key] = f"{len(value)} (on stderr)"
        elif key == "renames":
            view[key] = [f"{r['from']} -> {r['to']}" for r in value]
        elif key == "similarities":
            view[key] = _similarities_text(value)
        elif key == "enrich":
            view[key] = f"{value.get('enriched', 0)} enriched, {value.get('unchanged', 0)} unchanged" + (
                f", {value['failed']} failed" if value.get("failed") else "")
        elif key == "embed":
            view[key] = "failed (on stderr)" if value.get("error") else f"{value.get('embedded', 0)} embedded"
        elif key != "batches":
            view[key] = value
    return view


def _similarities_text(report: Mapping[str, Any]) -> str:
    files, unchanged = report.get("files", 0), report.get("unchanged_files", 0)
    parts = [f"{report.get('imported', 0)} relations imported from {files} file{'s' * (files != 1)}"] if files else []
    if report.get("removed"):
        parts.append(f"{report['removed']} removed")
    if unchanged:
        parts.append(f"{unchanged} file{'s' * (unchanged != 1)} unchanged")
    return ", ".join(parts) or "no similarities.json"


@app.command(short_help="Compute the vectors for semantic search")
def embed(
    all_: Annotated[bool, typer.Option("--all", help="Re-embed every document, not only new and changed ones.")]
    = False,
    batch: Annotated[Optional[int], typer.Option("--batch", min=1, max=4096,
                                                 help="Texts per embedding request (default 32; Gemini at most "
                                                      "100).", show_default=False)] = None,
    embed_backend: EmbedBackendOpt = None, embed_model: EmbedModelOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Compute the documents' embedding vectors for semantic and hybrid search: incremental (new and changed
    documents; a new model embeds everything), resumable (each batch is committed), long documents in
    overlapping heading/paragraph chunks."""
    opts = embed_options(embed_backend, embed_model)
    with open_kb(db, kb) as k, _progress() as progress:
        result = k.embeddings.embed(everything=all_, batch=batch, embed=opts, progress=progress.callback("Embedding"))
    if result["truncated"]:
        warn(f"{result['truncated']} long documents were embedded only in part (their first chunks)")
    emit(result, format, title="embed")
