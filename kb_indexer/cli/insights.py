"""report: what the recorded history says (questions that found nothing, never helped, most asked, the
feedback rate, documents never returned)."""

from __future__ import annotations

from typing import Annotated, Any, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, counted, echo, emit_json

_TITLES = {"zero_results": "Questions that found nothing", "never_helpful": "Asked twice or more, never marked "
           "helpful", "most_asked": "Most asked"}


@app.command("report", short_help="What nobody found, or found helpful")
def report(
    since: Annotated[Optional[str], typer.Option("--since", help="Only attempts made at or after this date "
                                                 "(YYYY-MM-DD or ISO-8601; UTC unless an offset is given).",
                                                 show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="Items listed per section (0: all).")] = 10,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Questions that found nothing, questions asked at least twice never marked helpful, the most asked
    questions, the feedback rate and the documents never returned, from the recorded history (read-only)."""
    with open_kb(db, kb) as k:
        out = k.learning.report(since, limit)
    if Format(format) is Format.json:
        emit_json(out)
    else:
        _table(out)


def _table(out: Mapping[str, Any]) -> None:
    lines = [f"Report since {out['since'] or 'the first recorded query'}"]
    for name, title in _TITLES.items():
        section = out[name]
        lines += ["", f"{title}: {section['count']}"]
        lines += [f"  {item['attempts']:>5}  {item['question']}" for item in section["items"]]
    rates = out["feedback_rate"]
    lines += ["", f"Feedback: {_rate(rates['overall'])}", f"Feedback by asker: {rates['askers']}"]
    lines += [f"  {r['asker']}: {_rate(r)}" for r in rates["by_asker"]]
    never = out["never_returned"]
    lines += ["", f"Documents never returned: {never['count']} ({never['note']})"]
    lines += [f"  {path}" for path in never["items"]]
    echo("\n".join(lines) + "\n")


def _rate(rate: Mapping[str, Any]) -> str:
    return (f"{rate['marked']} of {counted(rate['questions'], 'question')} marked ({share(rate['marked_share'])}), "
            f"{rate['helpful']} helpful ({share(rate['helpful_share'])})")


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
