"""rules: pin and hide rules (a team's curation of what a question shows)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, emit

rules_app = typer.Typer(help="Pin a document first for a question, or hide it (a team's curation).",
                        no_args_is_help=True)
app.add_typer(rules_app, name="rules", short_help="Pin or hide documents for questions")

_COLUMNS = ("id", "action", "pattern", "filepath", "reason", "author", "created_at", "indexed")
PatternArg = Annotated[str, typer.Argument(help="A question or keywords: the rule fires for every question with "
                                                "all of their words (\"alphago\" fires for \"how does AlphaGo "
                                                "work\").", metavar="QUESTION_OR_KEYWORD")]
PathArg = Annotated[str, typer.Argument(help="An indexed document (a path in the knowledge base).")]
ReasonOpt = Annotated[Optional[str], typer.Option("--reason", help="Why (shown with the rule and its results).")]


def _made(action: str, pattern: str, path: str, reason: Optional[str], db: DbOpt, kb: KbOpt, format: Format) -> None:
    with open_kb(db, kb) as k:
        out = k.rules.pin(pattern, path, reason) if action == "pin" else k.rules.hide(pattern, path, reason)
    if format is Format.json:
        emit(out, format)
        return
    emit({"rules": [out["rule"]]}, format, rows="rules", columns=_COLUMNS,
         title=f"rules {action}" + ("" if out["created"] else " (already there)"))


@rules_app.command("pin")
def rules_pin(pattern: PatternArg, file: PathArg, reason: ReasonOpt = None,
              db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Show a document first for every question with these words."""
    _made("pin", pattern, file, reason, db, kb, format)


@rules_app.command("hide")
def rules_hide(pattern: PatternArg, file: PathArg, reason: ReasonOpt = None,
               db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Leave a document out of every question with these words."""
    _made("hide", pattern, file, reason, db, kb, format)


@rules_app.command("list")
def rules_list(db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Every rule, with who made it, when and why."""
    with open_kb(db, kb) as k:
        emit(k.rules.list(), format, rows="rules", columns=_COLUMNS, title="rules")


@rules_app.command("remove")
def rules_remove(rule_id: Annotated[int, typer.Argument(help="The rule's id (`kbindex rules list`).",
                                                        metavar="ID")],
                 db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
    """Delete a rule."""
    with open_kb(db, kb) as k:
        out = k.rules.remove(rule_id)
    if format is Format.json:
        emit(out, format)
    else:
        emit({"rules": [out["removed"]]}, format, rows="rules", columns=_COLUMNS, title="rules remove")
