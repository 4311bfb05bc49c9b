"""similar, relate, unrelate, import-similarities, export-similarities."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options, warn_llm
from kb_indexer.api import similarities_file_text
from kb_indexer.cli.output import Format, emit, warn, warn_shown, write_file
from kb_indexer.defaults import DEFAULT_CONTEXT_THRESHOLD, SIMILAR_DEFAULT_LIMIT, SIMILARITY_TYPES

TYPES_HELP = "One of: " + ", ".join(SIMILARITY_TYPES) + "."


@app.command(short_help="Keywords related to a keyword, by type")
def similar(
    keyword: Annotated[str, typer.Argument(help="A keyword.")],
    type: Annotated[Optional[str], typer.Option("--type", "-t", help=TYPES_HELP)] = None,
    user_context: Annotated[Optional[str], typer.Option(
        "--user-context", "--context", "-c", help="Keep only relations whose context fits this description "
        "(scored by the LLM in one cached call; lexical overlap when no LLM answers). --context and -c, as in "
        "`kbindex query`, are the same option.")] = None,
    context_threshold: Annotated[float, typer.Option(
        "--context-threshold", min=0.0, max=1.0,
        help="Minimum context_match_score (0..1) with --user-context.")] = DEFAULT_CONTEXT_THRESHOLD,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="At most this many relations, the strongest "
                                       "(0: all); the JSON's total counts them all.")] = SIMILAR_DEFAULT_LIMIT,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Keywords related to KEYWORD, with type, context, score and direction."""
    with open_kb(db, kb) as k:
        if user_context is None:
            result = k.similar(keyword, type, limit=limit)
        else:
            result = k.similar(keyword, type, user_context, context_threshold,
                               llm_options(llm_backend, llm_model, no_cache, llm_timeout), limit)
    if user_context is not None:
        warn_llm(result)
    if result["total"] > result["count"] and format is not Format.json and limit == SIMILAR_DEFAULT_LIMIT:
        warn_shown(result["count"], result["total"], "related keywords")
    emit(result, format, rows="similar_keywords",
         columns=("keyword", "similarity_type", "score", *(("context_match_score",) if user_context is not None
                                                           else ()), "direction", "context"))


@app.command(short_help="Add or change a typed relation of two keywords")
def relate(
    keyword1: Annotated[str, typer.Argument(help="First keyword (the source when --directional).")],
    keyword2: Annotated[str, typer.Argument(help="Second keyword.")],
    type: Annotated[str, typer.Option("--type", "-t", help=TYPES_HELP)],
    context: Annotated[str, typer.Option("--context", "-c", help="When the relation applies.")],
    score: Annotated[float, typer.Option("--score", "-s", help="Relevance 0..1.")] = 0.5,
    directional: Annotated[bool, typer.Option("--directional", help="KEYWORD1 → KEYWORD2 only.")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Add (or update) a typed relation between two keywords."""
    with open_kb(db, kb) as k:
        out = k.relate(keyword1, keyword2, type, context, score, directional)
    _held(out)
    emit(out, format, title="relate")


@app.command(short_help="Remove the relations of two keywords")
def unrelate(
    keyword1: Annotated[str, typer.Argument()],
    keyword2: Annotated[str, typer.Argument()],
    type: Annotated[Optional[str], typer.Option("--type", "-t", help="Only this type (default: all).")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Remove the relation(s) between two keywords."""
    with open_kb(db, kb) as k:
        out = k.unrelate(keyword1, keyword2, type)
    _held(out)
    emit(out, format, title="unrelate")


def _held(out: Mapping[str, Any]) -> None:
    if out["action"] == "held_for_review":
        warn(f"held for review under the learning policy: pending item {out.get('learned_id')} changes nothing until "
             "a curator approves it (`kbindex learned approve ID`)")


@app.command("import-similarities", short_help="Import relations from a similarities.json file")
def import_similarities(
    file: Annotated[str, typer.Argument(help="A similarities.json file.")],
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Import relations from a similarities.json file (all valid, or nothing is written)."""
    with open_kb(db, kb) as k:
        emit(k.import_similarities(file), format, title="import-similarities")


@app.command("export-similarities", short_help="Write the relations as similarities.json")
def export_similarities(
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    learned: Annotated[bool, typer.Option("--learned", help="Also learned relations, and scores as `learn` "
                                          "adjusted them (default: only what files, relate and "
                                          "import-similarities wrote, with their scores).")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.json,
) -> None:
    """Write the relations in the similarities.json format (import-similarities reads it back)."""
    with open_kb(db, kb) as k:
        entries = k.export_similarities(learned=learned)["similarities"]
    text = similarities_file_text(entries)
    if output is None:
        sys.stdout.write(text)
        return
    write_file(output, text)
    emit({"output": str(output), "similarities": len(entries), "learned": learned}, format,
         title="export-similarities")
