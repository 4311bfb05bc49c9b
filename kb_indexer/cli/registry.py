"""Which module defines each command, so a run imports only the module of the command it runs.

An agent calls ``kbindex search`` as a fresh process many times a minute: building all commands (and
importing what they need) on every call would cost more than the search. ``KbGroup`` asks
:func:`load` for a command only when click needs it; ``kbindex --help`` lists them all.
``tests/cli/test_cli_startup.py`` checks this table against what the modules register.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import typer
import typer.main as tm

if TYPE_CHECKING:
    from typer._click import Command   # the click that Typer vendors

# The groups `kbindex --help` lists, each command with its module, in the order they are listed.
PANELS: dict[str, dict[str, str]] = {
    "Search": {"query": "query", "search": "search", "similar": "similarity", "show": "documents",
               "list-docs": "documents", "keywords": "keywords", "docs": "keywords", "stats": "keywords",
               "rules": "rules"},
    "Learning from feedback": {"feedback": "learn", "learn": "learn", "learned": "learn", "history": "learn",
                               "refine": "learn", "clear-history": "learn", "eval": "evaluate",
                               "report": "insights"},
    "Index": {"init": "database", "sync": "documents", "add": "documents", "update": "documents",
              "remove": "documents", "embed": "documents", "relate": "similarity", "unrelate": "similarity",
              "import-similarities": "similarity", "export-similarities": "similarity", "export": "database",
              "import": "database", "db-stats": "database"},
    "LLM": {"chat": "chat", "enrich": "enrich", "suggest-similarities": "enrich", "doctor": "llm", "cache": "llm"},
    "Skills and context": {"skills": "skills", "context": "context"},
    "Servers": {"mcp": "mcp", "model": "model"},
}
COMMANDS: dict[str, str] = {name: module for panel in PANELS.values() for name, module in panel.items()}
PANEL_OF: dict[str, str] = {name: title for title, panel in PANELS.items() for name in panel}
MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def load(app: typer.Typer, name: str) -> Command | None:
    """The click command (or group) ``name`` of the Typer ``app``, built from its module's registration;
    None if unknown. (The app is passed in: this module never imports the app module.)"""
    module = COMMANDS.get(name)
    if module is None:
        return None
    importlib.import_module(f"kb_indexer.cli.{module}")

    command: Command | None = None
    for info in app.registered_commands:
        callback = info.callback
        if command is None and (info.name or (callback and tm.get_command_name(callback.__name__))) == name:
            command = tm.get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                               rich_markup_mode=app.rich_markup_mode)
    for group in app.registered_groups:
        if command is None and group.name == name:
            command = tm.get_group_from_info(group, pretty_exceptions_short=app.pretty_exceptions_short,
                                             suggest_commands=True, rich_markup_mode=app.rich_markup_mode)
    if command is not None:
        command.rich_help_panel = PANEL_OF[name]  # type: ignore[attr-defined]  # Typer's commands and groups have it
    return command
