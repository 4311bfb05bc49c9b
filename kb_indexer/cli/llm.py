"""doctor, cache stats, cache clear; and the LLM options every LLM-using command shares.

Reuse in a command::

    from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options, warn_llm

    def cmd(..., llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None,
            no_cache: NoCacheOpt = False, llm_timeout: LlmTimeoutOpt = None):
        opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
        result = ...(opts)
        warn_llm(result)          # the stderr warning when the LLM was not used
"""

from __future__ import annotations

from typing import Annotated, Any, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, app, open_kb
from kb_indexer.cli.output import Format, _cell, emit, warn
from kb_indexer.errors import KbError
from kb_indexer.llm.config import LLMOptions, check_timeout

LlmBackendOpt = Annotated[Optional[str], typer.Option(
    "--llm-backend", help="LLM backend: ollama, gemini, openai (any OpenAI-compatible server) or none (env "
    "KBINDEX_LLM_BACKEND). Optional LLM steps (query --context, similar --user-context, skills match, enrich) use "
    "one only when it is chosen; chat and doctor default to ollama.",
    show_default=False)]
LlmModelOpt = Annotated[Optional[str], typer.Option(
    "--llm-model", help="Model name (env KBINDEX_LLM_MODEL; default depends on the backend).", show_default=False)]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM answer cache.")]
LlmTimeoutOpt = Annotated[Optional[float], typer.Option(
    "--llm-timeout", help="Seconds one LLM call may take in all, retries included (env KBINDEX_LLM_TIMEOUT; "
    "default 60).",
    show_default=False)]


def llm_options(backend: Optional[str] = None, model: Optional[str] = None, no_cache: bool = False,
                timeout: Optional[float] = None) -> LLMOptions:
    """The LLM flags of one command; a bad ``--llm-timeout`` (NaN, infinite, not positive) is a usage
    error even when the command ends up not calling an LLM."""
    if timeout is not None:
        timeout = check_timeout(timeout)
    return LLMOptions(backend=backend, model=model, no_cache=no_cache, timeout=timeout)


def warn_llm(result: Mapping[str, Any]) -> None:
    """Warn on stderr when a result says the LLM was tried but not used (or not for every batch)."""
    info = result.get("llm") if isinstance(result, Mapping) else None
    if not info or not info.get("error") or info.get("backend") == "none":
        return
    fallback = f"; used the {info['fallback']} fallback" if info.get("fallback") else ""
    who = f"LLM {info.get('backend')} ({info.get('model') or 'default model'})"
    if not info.get("used"):
        warn(f"{who} not used: {info['error']}{fallback}")
    elif info.get("fallback"):
        batches = info.get("batches") or {}
        warn(f"{who} failed for {batches.get('lexical', 'some')} of {batches.get('total', '?')} batches: "
             f"{info['error']}{fallback} for those")


def warn_semantic(result: Mapping[str, Any]) -> None:
    """Warn on stderr when a semantic or hybrid query ran without vectors although they were asked for
    (``--method semantic/hybrid``, an embedding backend chosen, or vectors in the index)."""
    info = result.get("semantic") if isinstance(result, dict) else None
    query = (result.get("query") or {}) if isinstance(result, dict) else {}
    if not info:
        return
    missing = info.get("documents_without_vectors")
    if info.get("used") and missing:
        warn(f"{missing} documents have no vectors of {info.get('model')} and are found only lexically "
             "(run `kbindex embed`)")
    if not query.get("fallback"):
        return
    asked = query.get("method_requested") in ("semantic", "hybrid") or info.get("configured") or missing is not None
    if asked:
        warn(f"{query.get('method_requested')} search without vectors: {info.get('error')}; lexical results")


# -- doctor -------------------------------------------------------------------------------


def _vector_search(found: dict[str, Any] | None) -> str | None:
    if not found:
        return None
    return f"{found['engine']} ({found['note']})" if found.get("note") else found["engine"]


def _local_model(local: dict[str, Any] | None) -> str | None:
    if not local:
        return None
    state = f"running at {local['url']} ({', '.join(local['models'][:2])})" if local["running"] \
        else f"not running at {local['url']}"
    return state + (f": {local['hint']}" if local.get("hint") else "")


def _embedding(found: dict[str, Any] | None) -> str | None:
    if not found:
        return None
    model = f"{found['backend']} {found['model'] or '(server default)'}"
    done = f" in this process: {found['encoder']}" if found.get("encoder") else ""
    return model + done + (f" ({found['error']})" if found.get("error") else "")


def _render_doctor(report: dict[str, Any]) -> None:
    # lazy: rich loads only for a table (cli modules are imported by every run's --help and JSON runs)
    from rich.console import Console
    from rich.table import Table  # lazy: rich, only for a table


    table = Table(title="kbindex doctor", show_header=False)
    table.add_column("check", style="bold")
    table.add_column("value")
    llm, db = report["llm"], report["database"]
    rows = [
        ("LLM backend", f"{llm['backend']} (from {llm['sources'].get('backend', 'default')})"),
        ("model", (llm.get("model_label") or llm["model"] or "not set")
                  + (f" (from {llm['sources'].get('model', 'default')})" if llm["model"] else "")),
        ("URL tried", llm["url"] and f"{llm['url']} (from {llm['sources'].get('url', 'default')})"),
        ("API key set", f"{llm['api_key_set']}"
                        + (f" ({llm['sources']['api_key']})" if llm["sources"].get("api_key") else "")),
        ("reachable", llm["reachable"]),
        ("model available", llm["model_available"]),
        ("round trip (ms)", llm["latency_ms"]),
        ("structured output", llm["structured_output"]),
        ("LLM error", llm["error"]),
        (".env file", llm["env_file"]),
        ("local model", _local_model(report.get("local_model"))),
        ("embedding", _embedding(report.get("embedding"))),
        ("index", db["path"] + ("" if db["exists"] else " (missing)")),
        ("schema", f"{db['schema']['migrations']}/{db['schema']['known']} migrations, latest "
                   f"{db['schema']['latest']}" if db.get("schema") else None),
        ("LLM cache entries", db.get("llm_cache_entries")),
        ("vector search", _vector_search(db.get("vector_search"))),
        ("ok", report["ok"]),
    ]
    for key, value in rows:
        table.add_row(key, _cell(value))
    Console(soft_wrap=False).print(table)  # the problems follow on stderr, as warnings


@app.command(short_help="Check the LLM set-up and the index")
def doctor(
    db: DbOpt = None,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, llm_timeout: LlmTimeoutOpt = None,
    no_roundtrip: Annotated[bool, typer.Option("--no-roundtrip", help="Do not send a test completion.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a problem is found (the report then "
                                        "goes with the error on stderr, in details.report).")] = False,
    format: FormatOpt = Format.table,
) -> None:
    """Check the LLM setup (backend, model, server or key, latency) and the index (location, schema)."""
    # lazy: the API, when doctor runs (cli/llm is imported by search for its options)
    from kb_indexer.api import KnowledgeBase

    report = KnowledgeBase.doctor(db, llm_options(llm_backend, llm_model, False, llm_timeout),
                                  roundtrip=not no_roundtrip)
    if strict and not report["ok"]:   # a failed command prints nothing on stdout: the report is in the error
        n = len(report["problems"])
        raise KbError(f"doctor found {n} problem{'s' if n != 1 else ''}: " + "; ".join(report["problems"]),
                      code="doctor_problems", details={"problems": report["problems"], "report": report})
    emit(report, format, render=_render_doctor)
    for p in report["problems"]:
        warn(p)


# -- cache --------------------------------------------------------------------------------

cache_app = typer.Typer(help="The LLM answer cache kept in the index.", no_args_is_help=True,
                        rich_markup_mode=None)
app.add_typer(cache_app, name="cache", short_help="The LLM answer cache kept in the index")


@cache_app.command("stats", short_help="Entries, hits and size of the LLM cache")
def cache_stats(db: DbOpt = None, format: FormatOpt = Format.table) -> None:
    """Entries, hits and size of the LLM cache, per task, backend and model."""
    with open_kb(db, None) as kb:
        result = kb.cache_stats()
    emit(result, format, rows="by_task", columns=("task", "backend", "model", "entries", "hits", "last_used"),
         title="LLM cache")


@cache_app.command("clear")
def cache_clear(
    task: Annotated[Optional[str], typer.Option("--task", help="Only this task (e.g. context_match).")] = None,
    backend: Annotated[Optional[str], typer.Option("--backend", help="Only this backend.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Only this model.")] = None,
    db: DbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Delete cached LLM answers (all, or those matching the filters)."""
    with open_kb(db, None) as kb:
        result = kb.cache_clear(task=task, backend=backend, model=model)
    emit(result, format, title="cache clear")
