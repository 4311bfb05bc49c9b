"""skills sync|embed|list|show|remove|match|session|load: Agent Skills (SKILL.md folders) in the index."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.llm import LlmBackendOpt, LlmModelOpt, LlmTimeoutOpt, NoCacheOpt, llm_options
from kb_indexer.cli.output import Format, counted, echo, emit, emit_json, warn

skills_app = typer.Typer(help="Agent Skills: index SKILL.md folders and match them to a message.",
                         no_args_is_help=True)
app.add_typer(skills_app, name="skills", short_help="Agent Skills: index SKILL.md folders, match them")


@skills_app.command("sync", short_help="Index the skills of the given and remembered folders")
def skills_sync(
    dirs: Annotated[Optional[list[str]], typer.Argument(
        help="Skills directories holding <name>/SKILL.md (remembered; also read: those given before and "
             "KBINDEX_SKILLS).", show_default=False)] = None,
    forget: Annotated[Optional[list[str]], typer.Option("--forget", help="Forget this remembered directory "
                                                        "and drop its skills (repeatable).")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Index the skills of the given and remembered directories (only changed files are read again)."""
    with open_kb(db, kb) as k:
        result = k.skills.sync(list(dirs or []), forget=list(forget or []))
    for e in result["errors"]:   # on stderr in every format, as document sync does
        warn(f"{e['file']}: {e['message']}")
    if format is Format.json:
        emit_json(result)
        return
    synced = counted(len(result["dirs"]), "directory", "directories")
    echo(f"Skills: {result['skills']} indexed ({len(result['added'])} added, {len(result['updated'])} "
         f"updated, {len(result['removed'])} removed, {result['unchanged']} unchanged, "
         f"{counted(len(result['errors']), 'error')}) from {synced}\n")


@skills_app.command("embed", short_help="Store each skill's vector, to match by meaning too")
def skills_embed(
    everything: Annotated[bool, typer.Option("--all", help="Embed every skill again, not only the changed ones.")]
    = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Store each skill's name-and-description vector (the local all-MiniLM-L6-v2 model, no torch): `skills
    match` then also finds a skill by meaning, not only by shared words."""
    with open_kb(db, kb) as k:
        emit(k.skills.embed(everything), format, title="skills embed")


@skills_app.command("list")
def skills_list(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """The indexed skills and the remembered directories."""
    with open_kb(db, kb) as k:
        emit(k.skills.all(), format, rows="skills", columns=("name", "description", "folder"))


@skills_app.command("show")
def skills_show(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """One skill with its metadata and body."""
    with open_kb(db, kb) as k:
        data = k.skills.show(name)
    if format is Format.json:
        emit_json(data)
        return
    emit({k: v for k, v in data.items() if k != "body"}, format, title=f"skill {data['name']}")
    echo(data["body"] + ("\n" if data["body"] else ""))


@skills_app.command("remove", short_help="Drop a skill from the index (its folder stays)")
def skills_remove(
    name: Annotated[str, typer.Argument(help="The skill's name.")],
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Drop a skill from the index (its folder stays: the next sync indexes it again)."""
    with open_kb(db, kb) as k:
        emit(k.skills.remove(name), format, title="skills remove")


@skills_app.command("match", short_help="The skills a message needs")
def skills_match(
    message: Annotated[str, typer.Argument(help="The chat message to find skills for.")],
    top: Annotated[int, typer.Option("--top", "-n", help="At most this many skills.")] = 3,
    min_score: Annotated[Optional[float], typer.Option("--min-score", help="Keyword score a skill needs "
                                                       "(default: the tuned threshold).")] = None,
    candidates: Annotated[int, typer.Option("--candidates", help="How many keyword candidates the LLM chooses "
                                            "among (and the result lists).")] = 20,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Keyword matching only.")] = False,
    session: Annotated[Optional[str], typer.Option("--session", help="Count this message as the next turn of "
                                                   "this conversation (loads and evicts its skills).")] = None,
    evict_after: Annotated[int, typer.Option("--evict-after", help="With --session: unload a skill not matched "
                                             "in this many turns, unless still relevant.")] = 3,
    max_loaded: Annotated[int, typer.Option("--max-loaded", help="With --session: at most this many skills "
                                            "loaded.")] = 5,
    llm_backend: LlmBackendOpt = None, llm_model: LlmModelOpt = None, no_cache: NoCacheOpt = False,
    llm_timeout: LlmTimeoutOpt = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """The skills a message needs (none for a message no skill serves): the LLM chooses among the keyword
    candidates when a backend is configured, else (or when it fails) the keyword matcher decides."""
    opts = llm_options(llm_backend, llm_model, no_cache, llm_timeout)
    with open_kb(db, kb) as k:
        data = k.skills.match(message, top=top, min_score=min_score, use_llm=not no_llm, candidates=candidates,
                              llm=opts, session=session, evict_after=evict_after, max_loaded=max_loaded)
        no_backend = k.skills.NO_BACKEND
    reason = data.get("fallback_reason")
    if reason and reason != no_backend:   # no backend configured is not a failure
        warn(reason)
    emit(data, format, rows="matched", columns=("name", "score", "source", "reason"))


@skills_app.command("session", short_help="A match session's state, per skill")
def skills_session(
    session: Annotated[str, typer.Argument(help="The session id given to `skills match --session`.")],
    reset: Annotated[bool, typer.Option("--reset", help="Forget the session (turns, messages, skills).")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """A match session's state: turn, and per skill its priority, matches, last matched turn, loaded."""
    with open_kb(db, kb) as k:
        data = k.skills.session(session, reset=reset)
    if reset:
        emit(data, format, title="skills session --reset")
        return
    emit(data, format, rows="skills", columns=("name", "loaded", "priority", "match_count", "last_matched_turn"))


class LoadFormat(str, Enum):
    markdown = "markdown"
    json = "json"


@skills_app.command("load", short_help="The loaded skills' bodies, within a token budget")
def skills_load(
    session: Annotated[str, typer.Option("--session", help="The session whose loaded skills to print.")],
    budget: Annotated[Optional[int], typer.Option("--budget", help="At most this many tokens (estimated as "
                                                  "characters / 4, CJK characters one each; default: no limit).")] = None,
    db: DbOpt = None, kb: KbOpt = None,
    format: Annotated[LoadFormat, typer.Option("--format", "-f", case_sensitive=False,
                                               help="markdown (to inject into a prompt) or json.")
                      ] = LoadFormat.markdown,
) -> None:
    """The loaded skills' bodies for prompt injection, most important first, within the token budget."""
    with open_kb(db, kb) as k:
        data = k.skills.load(session, budget=budget)
    if format is LoadFormat.json:
        emit_json(data)
        return
    for s in data["left_out"]:
        warn(f"skill {s['name']} left out: " + ("over the token budget" if s["reason"] == "budget"
                                                 else s["reason"]))
    if not data["skills"] and not data["left_out"]:
        warn(f"no skill is loaded in session {session!r}: nothing to inject (`kbindex skills match MESSAGE "
             "--session ID` loads the skills a message needs)")
    echo(data["markdown"])
