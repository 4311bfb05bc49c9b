"""skills sync|list|show|remove|match: Agent Skills (SKILL.md folders) in the index."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options
from kb_indexer.cli.output import Format, emit, emit_json, warn

skills_app = typer.Typer(help="Agent Skills: index SKILL.md folders and match them to a message.",
                         no_args_is_help=True)
app.add_typer(skills_app, name="skills")


@skills_app.command("sync")
def skills_sync(
    dirs: Annotated[Optional[list[str]], typer.Argument(
        help="Skills directories holding <name>/SKILL.md (remembered; also read: those given before and "
             "KBINDEX_SKILLS).", show_default=False)] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Index the skills of the given and remembered directories (only changed files are read again)."""
    with open_kb(db, kb) as k:
        result = k.skills_sync(list(dirs or []))
    if format is Format.json:
        emit_json(result)
        return
    for e in result["errors"]:
        warn(f"{e['file']}: {e['message']}")
    sys.stdout.write(f"Skills: {result['skills']} indexed ({len(result['added'])} added, {len(result['updated'])} "
                     f"updated, {len(result['removed'])} removed, {result['unchanged']} unchanged, "
                     f"{len(result['errors'])} errors) from {len(result['dirs'])} directories\n")


@skills_app.command("list")
def skills_list(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """The indexed skills and the remembered directories."""
    with open_kb(db, kb) as k:
        emit(k.skills_list(), format, rows="skills", columns=("name", "description", "folder"))


@skills_app.command("show")
def skills_show(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """One skill with its metadata and body."""
    with open_kb(db, kb) as k:
        data = k.skills_show(name)
    if format is Format.json:
        emit_json(data)
        return
    emit({k: v for k, v in data.items() if k != "body"}, format, title=f"skill {data['name']}")
    sys.stdout.write(data["body"] + ("\n" if data["body"] else ""))


@skills_app.command("remove")
def skills_remove(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Drop a skill from the index (its folder stays: the next sync indexes it again)."""
    with open_kb(db, kb) as k:
        emit(k.skills_remove(name), format, title="skills remove")


@skills_app.command("match")
def skills_match(
    message: Annotated[str, typer.Argument(help="The chat message to find skills for.")],
    top: Annotated[int, typer.Option("--top", "-n", help="At most this many skills.")] = 3,
    min_score: Annotated[Optional[float], typer.Option("--min-score", help="Keyword score a skill needs "
                                                       "(default: the tuned threshold).")] = None,
    candidates: Annotated[int, typer.Option("--candidates", help="How many keyword candidates the LLM chooses "
                                            "among (and the result lists).")] = 20,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Keyword matching only.")] = False,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """The skills a message needs (none for a message no skill serves): the LLM chooses among the keyword
    candidates when a backend is configured, else (or when it fails) the keyword matcher decides."""
    opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
    with open_kb(db, kb) as k:
        data = k.skills_match(message, top=top, min_score=min_score, use_llm=not no_llm, candidates=candidates,
                              llm=opts)
    from kb_indexer.skills.llm_match import NO_BACKEND

    reason = data.get("fallback_reason")
    if reason and reason != NO_BACKEND:   # no backend configured is not a failure
        warn(reason)
    emit(data, format, rows="matched", columns=("name", "score", "source", "reason"))

