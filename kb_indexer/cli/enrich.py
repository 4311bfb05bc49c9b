"""enrich, suggest-similarities: automatic indexing (see kb_indexer.enrich)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Callable, Optional, TypeVar

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options, warn_llm
from kb_indexer.cli.output import Format, _console, emit, report_documents

T = TypeVar("T")
NoLlmOpt = Annotated[bool, typer.Option("--no-llm", help="Use the statistical keyphrase extractor only.")]
NoLlmSuggestOpt = Annotated[bool, typer.Option("--no-llm", help="Propose only what needs no LLM: abbreviations "
                                               "and co-occurrence.")]


def run_with_progress(label: str, fn: Callable[[Callable[[int, int], None] | None], T]) -> T:
    """``fn(progress)`` with a progress bar on stderr when it is a terminal (stdout is only the result)."""
    if not sys.stderr.isatty():
        return fn(None)
    from rich.progress import Progress  # lazy: rich, only for a progress bar on a terminal

    with Progress(transient=True, console=_console(stderr=True)) as bar:
        task = bar.add_task(label, total=None)
        return fn(lambda i, n: bar.update(task, completed=i, total=n))


@app.command(short_help="Write keywords for documents (LLM or statistical)")
def enrich(
    files: Annotated[Optional[list[str]], typer.Argument(help="Documents to enrich (inside the KB root).",
                                                         show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every document of the knowledge base.")] = False,
    missing_only: Annotated[bool, typer.Option("--missing-only", help="Only documents without keywords of a "
                                               "person (keywords file or front matter).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be generated; write nothing.")] = False,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Write <doc>.keywords.json beside each "
                                        "document (--no-write: into the index only).")] = True,
    force: Annotated[bool, typer.Option("--force", help="Enrich documents already enriched as they are "
                                        "now too.")] = False,
    no_llm: NoLlmOpt = False,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Generate keywords (with an LLM also a title, summary and questions) for documents, merge them into
    their .keywords.json files (a person's keywords are never dropped) and index them."""
    opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
    with open_kb(db, kb) as k:
        result = run_with_progress("Enriching", lambda progress: k.enrich.documents(
            files or None, all_=all_, missing_only=missing_only, dry_run=dry_run, write=write,
            use_llm=not no_llm, llm=opts, force=force, progress=progress))
    report_documents(result)
    warn_llm(result)
    emit(result, format, rows="documents", columns=("filepath", "action", "method", "generated_keywords"))


@app.command("suggest-similarities", short_help="Propose typed relations among the keywords")
def suggest_similarities(
    apply: Annotated[bool, typer.Option("--apply", help="Import the suggestions as learned items (see "
                                        "`kbindex learned list`; undo with `kbindex learned remove`).")] = False,
    min_score: Annotated[float, typer.Option("--min-score", help="Only suggestions scoring at least this.")] = 0.5,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Also write the suggestions to this "
                                                   "file in the similarities.json format.")] = None,
    no_llm: NoLlmSuggestOpt = False,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Propose typed relations among the index's keywords: abbreviations, co-occurrence and (with an LLM)
    synonyms and broader/narrower terms, each with a context sentence, a score and its evidence."""
    opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
    with open_kb(db, kb) as k:
        result = k.enrich.suggest_similarities(apply=apply, min_score=min_score, output=output, use_llm=not no_llm,
                                        llm=opts)
    warn_llm(result)
    emit(result, format, rows="suggestions", columns=("keyword1", "keyword2", "type", "score", "source"))
