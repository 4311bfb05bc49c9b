"""query (ranked retrieval): its flags become one QueryOptions."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, EmbedBackendOpt, EmbedModelOpt, KbOpt, app, embed_options, open_kb
from kb_indexer.cli.llm import (LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options, warn_llm,
                                warn_semantic)
from kb_indexer.cli.output import warn, warn_shown
from kb_indexer.cli.results import ResultFormat as ResultFormat, ResultFormatOpt as ResultFormatOpt
from kb_indexer.cli.results import emit_result as emit_result
from kb_indexer.defaults import (DEFAULT_CONTEXT_THRESHOLD, DEFAULT_DEPTH, DEFAULT_LIMIT, DEFAULT_MIN_WEIGHT,
                                 MAX_DEPTH, MAX_LIMIT)
from kb_indexer.api import QueryOptions, check_question, parse_weight_options

if TYPE_CHECKING:
    from kb_indexer.api import KnowledgeBase
    from kb_indexer.results import StaleNote


class Method(str, Enum):
    auto = "auto"
    keyword = "keyword"
    sqlite = "sqlite"
    fulltext = "fulltext"
    semantic = "semantic"
    hybrid = "hybrid"


ContextOpt = Annotated[Optional[str], typer.Option(
    "--context", "-c", help="Your context; relations whose stored context does not fit it (context match "
    "below --context-threshold) are down-weighted.", show_default=False)]
ContextThresholdOpt = Annotated[float, typer.Option(
    "--context-threshold", min=0.0, max=1.0,
    help="Context-match score (0..1, LLM or lexical) from which a relation fits --context and keeps its "
         "full weight; below it, its weight falls to half at 0.")]
ExpandDepthOpt = Annotated[int, typer.Option(
    "--expand-depth", "-d", min=0, max=MAX_DEPTH,
    help="Similarity hops to expand keywords (0 = none).")]
MinWeightOpt = Annotated[float, typer.Option(
    "--min-weight", "--threshold", "-t", min=0.0, max=1.0,
    help="Minimum expansion weight (type weight x relation score x hop decay x context fit); "
         "--threshold is its older name.")]
TypesOpt = Annotated[Optional[list[str]], typer.Option(
    "--types", help="Only expand through these similarity types (repeatable or comma-separated). contrast "
                    "expands only for comparison questions (A vs B, compare, difference between) or when "
                    "named here.", show_default=False)]
WeightOpt = Annotated[Optional[list[str]], typer.Option(
    "--weight", help="Override a type's expansion weight, e.g. --weight narrower=0.9 (defaults: synonym, "
                     "abbreviation 1; narrower 0.8; related_concept, application, component, prerequisite, broader "
                     "0.5; contrast 0, or 1 for a comparison question or --types contrast).",
    show_default=False)]
MethodOpt = Annotated[Method, typer.Option(
    "--method", "-m", case_sensitive=False,
    help="auto: keyword (alias sqlite) for identifier-like queries (camelCase, snake_case, file.ext, ENOENT, "
         "TypeError, 404), semantic for conceptual ones (related to, similar, about, how to, 관련, 비슷한, "
         "에 대해, 방법, 어떻게), else hybrid (tags, full text and vectors); a known keyword or a proper noun "
         "in a question (How does AlphaGo work?) is not an identifier. Without vectors (kbindex embed) "
         "semantic and hybrid run lexically and the JSON says so.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=0, max=MAX_LIMIT,
                                   help="At most this many results (0: all); the JSON's total counts "
                                        "every document found.")]
ExplainOpt = Annotated[bool, typer.Option("--explain", help="Show each result's score parts (a table column; "
                                      "with --format json every part and the expansion details too).")]
PrfOpt = Annotated[bool, typer.Option("--prf", help="Pseudo-relevance feedback: add the most telling words of "
                                     "the best full-text matches (knowledge bases of 500+ documents).")]
SyncOpt = Annotated[bool, typer.Option("--sync", help="Sync the knowledge base first (otherwise a changed KB "
                                   "is only reported on stderr).")]
NoStaleCheckOpt = Annotated[bool, typer.Option(
    "--no-stale-check", help="Skip the check for files changed since the last sync (stats only; on large "
                             "knowledge bases just folders and recently indexed files).")]

RerankOpt = Annotated[Optional[str], typer.Option(
    "--rerank", help="Rerank the top results: 'llm' (the configured --llm-backend judges them), the URL of an "
                     "OpenAI-compatible /rerank endpoint (a cross-encoder, e.g. llama.cpp's server), or 'off'. "
                     "Default: KBINDEX_RERANK, else off. The judgement is blended with the fused score.",
    show_default=False)]


@app.command(short_help="Find documents for a question, ranked and explained")
def query(
    args: Annotated[Optional[list[str]], typer.Argument(
        help="The question (quote it). With --keywords, further arguments are more keywords, as in "
             "`--keywords AlphaGo \"Monte Carlo\"`; without, they are joined into the question. "
             "It may be left out when --keywords is given.",
        show_default=False, metavar="[QUESTION] [KEYWORD]...")] = None,
    keywords: Annotated[Optional[list[str]], typer.Option(
        "--keywords", "-k", help="Keywords to search for (default: known keywords found in the question).",
        show_default=False)] = None,
    context: ContextOpt = None,
    context_threshold: ContextThresholdOpt = DEFAULT_CONTEXT_THRESHOLD,
    expand_depth: ExpandDepthOpt = DEFAULT_DEPTH,
    min_weight: MinWeightOpt = DEFAULT_MIN_WEIGHT,
    types: TypesOpt = None,
    weight: WeightOpt = None,
    method: MethodOpt = Method.auto,
    limit: LimitOpt = DEFAULT_LIMIT,
    explain: ExplainOpt = False,
    prf: PrfOpt = False,
    sync: SyncOpt = False,
    no_stale_check: NoStaleCheckOpt = False,
    rerank: RerankOpt = None,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None, embed_backend: EmbedBackendOpt = None, embed_model: EmbedModelOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: ResultFormatOpt = ResultFormat.table,
) -> None:
    """Find documents for a question: keywords expanded through typed similarities, fused with full-text
    BM25, with provenance (which keyword and which expansion found each document). Recorded in the history."""
    question, extra = (args[0], args[1:]) if args else ("", [])
    if keywords:
        keywords = list(keywords) + list(extra)
    elif extra:
        question = " ".join([question, *extra])
    check_question(question, keywords)    # before --sync writes anything
    options = QueryOptions(context=context, expand_depth=expand_depth, min_weight=min_weight,
                           context_threshold=context_threshold, types=tuple(types) if types else None,
                           weights=parse_weight_options(weight or []), method=method.value, limit=limit,
                           explain=explain, prf=prf)
    with open_kb(db, kb) as k:
        stale = _refresh(k, sync, not no_stale_check)
        data = k.query(question, keywords, options, llm=llm_options(llm_backend, llm_model, no_cache, llm_timeout),
                       embed=embed_options(embed_backend, embed_model), rerank=rerank)
    data["stale"] = stale   # on stderr for people, and in the JSON for agents (null: up to date, or not checked)
    if data.get("rerank", {}).get("error"):
        warn(f"rerank skipped, fused order kept: {data['rerank']['error']}")
    if data.get("history_error"):  # on stderr for people, and kept in the JSON (with its code) for agents
        warn(data["history_error"])
    warn_llm(data)
    warn_semantic(data)
    if data["total"] > data["count"] and format is not ResultFormat.json and limit == DEFAULT_LIMIT:
        warn_shown(data["count"], data["total"])   # (a limit chosen with -n is not news)
    emit_result(data, format, "query")


def _refresh(k: KnowledgeBase, sync: bool, stale_check: bool) -> StaleNote | None:
    """``--sync`` first, or say on stderr (and return, for the JSON) that files changed since the last sync."""
    if sync:
        result = k.sync()
        for err in result["errors"]:
            warn(f"{'' if err.get('indexed') else 'skipped '}{err['file']}: {err['message']}")
    elif stale_check:
        note = k.stale_note()
        if note:
            warn(note["message"])
        return note
    return None
