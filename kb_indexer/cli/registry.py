"""Which module defines each command, so a run imports only the module of the command it runs.

An agent calls ``kbindex search`` as a fresh process many times a minute: building all commands (and
importing what they need) on every call would cost more than the search. ``KbGroup`` asks
:func:`load` for a command only when click needs it; ``kbindex --help`` lists them all.
``tests/test_cli_startup.py`` checks this table against what the modules register.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import typer
import typer.main as tm

if TYPE_CHECKING:
    from typer._click import Command   # the click that Typer vendors

# In the order `kbindex --help` lists them.
COMMANDS: dict[str, str] = {
    "init": "database", "export": "database", "import": "database", "db-stats": "database",
    "add": "documents", "update": "documents", "remove": "documents", "list-docs": "documents",
    "show": "documents", "sync": "documents", "embed": "documents",
    "keywords": "keywords", "docs": "keywords", "stats": "keywords",
    "doctor": "llm", "cache": "llm", "model": "model", "enrich": "enrich",
    "query": "query",
    "history": "learn", "refine": "learn", "feedback": "learn", "learn": "learn", "clear-history": "learn",
    "learned": "learn",
    "search": "search",
    "similar": "similarity", "relate": "similarity", "unrelate": "similarity",
    "import-similarities": "similarity", "export-similarities": "similarity",
    "suggest-similarities": "enrich",
    "skills": "skills",
    "context": "context",
    "chat": "chat",
    "mcp": "mcp",
}
MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def load(app: typer.Typer, name: str) -> Command | None:
    """The click command (or group) ``name`` of the Typer ``app``, built from its module's registration;
    None if unknown. (The app is passed in: this module never imports the app module.)"""
    module = COMMANDS.get(name)
    if module is None:
        return None
    importlib.import_module(f"kb_indexer.cli.{module}")

    for info in app.registered_commands:
        callback = info.callback
        if (info.name or (callback and tm.get_command_name(callback.__name__))) == name:
            return tm.get_command_from_info(info, pretty_exceptions_short=app.pretty_exceptions_short,
                                            rich_markup_mode=app.rich_markup_mode)
    for group in app.registered_groups:
        if group.name == name:
            return tm.get_group_from_info(group, pretty_exceptions_short=app.pretty_exceptions_short,
                                          suggest_commands=True, rich_markup_mode=app.rich_markup_mode)
    return None


def load_all() -> None:
    """Import every command module (for tools that walk ``app.registered_commands``)."""
    for module in MODULES:
        importlib.import_module(f"kb_indexer.cli.{module}")
