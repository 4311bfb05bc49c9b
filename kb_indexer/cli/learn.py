"""history, refine, feedback, learn, learned, clear-history."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Iterator, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, counted, echo, emit, emit_json, emit_json_streamed, warn
from kb_indexer.cli.results import ResultFormat, ResultFormatOpt, emit_result
from kb_indexer.learn.api import SECTIONS, count_line
from kb_indexer.defaults import MAX_DEPTH, MAX_LIMIT
from kb_indexer.errors import UsageError

if TYPE_CHECKING:
    from kb_indexer.api import KnowledgeBase


@app.command(short_help="Recent queries, or one query's attempts")
def history(
    query_id: Annotated[Optional[int], typer.Argument(help="Show this query with its attempts and feedback.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="How many recent queries (0: all).")] = 10,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Recent queries, or one query's attempts and feedback."""
    with open_kb(db, kb) as k:
        if query_id is None:   # written as the queries are read (--limit 0 lists millions in little memory)
            _stream_history(k.learning.history_items(limit=limit), format)
        else:
            data = k.learning.history(query_id)
            if format is Format.json:
                emit_json(data)
            else:
                echo(_history_line(data) + "\n")
                emit({"attempts": data["attempts"]}, format, rows="attempts",
                     columns=("attempt_id", "asker", "keywords", "method", "result_count", "age", "created_at"))
                emit({"feedback": data["feedback"]}, format, rows="feedback",
                     columns=("filepath", "helpful", "asker", "attempt_id", "processed"))


def _history_line(q: Mapping[str, Any]) -> str:
    """``[1] "How does AlphaGo work?" (2 attempts, 1 hour ago)``, then its context and feedback if any."""
    line = f"[{q['query_id']}] {q['summary']}"
    more = ([f"context: {q['context']}"] if q.get("context") else [])
    feedback = q["feedback"] if isinstance(q["feedback"], int) else len(q["feedback"])
    if feedback:
        more.append(f"{feedback} feedback mark{'' if feedback == 1 else 's'}")
    return line + ("\n    " + " · ".join(more) if more else "")


def _stream_history(items: Iterator[Mapping[str, Any]], format: Format) -> None:
    """The history listing as the queries are read: under --format json ``{"queries": [...], "count": n}``,
    else the design's listing, one query per line (stdout is only the result)."""
    count = 0

    def counted_items() -> Iterator[Mapping[str, Any]]:
        nonlocal count
        for count, q in enumerate(items, 1):
            yield q
    if format is Format.json:
        emit_json_streamed({"queries": counted_items(), "count": lambda: count})
        return
    lines: list[str] = []
    for q in counted_items():
        lines.append(_history_line(q))
        if len(lines) == 1000:
            echo("\n".join(lines) + "\n")
            lines = []
    if lines or not count:
        echo("\n".join(lines or ["No queries recorded yet (run `kbindex query`)."]) + "\n")


@app.command(short_help="Retry a recorded query with new keywords")
def refine(
    args: Annotated[Optional[list[str]], typer.Argument(
        help="QUERY_ID (omit with --last); with --keywords, further arguments are more keywords, as in "
             "`refine 1 --keywords AlphaGo \"Monte Carlo\"`.", metavar="[QUERY_ID] [KEYWORD]...",
        show_default=False)] = None,
    keywords: Annotated[Optional[list[str]], typer.Option("--keywords", "-k", help="The new keywords.",
                                                          show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="Refine the most recent query.")] = False,
    min_weight: Annotated[Optional[float], typer.Option("--min-weight", "--threshold", "-t", min=0.0, max=1.0,
                                                        help="Minimum expansion weight (--threshold is its "
                                                             "older name).")] = None,
    context_threshold: Annotated[Optional[float], typer.Option(
        "--context-threshold", min=0.0, max=1.0, help="Context-match score from which a relation fits the "
                                                      "query's context (default: the recorded query's).")] = None,
    expand_depth: Annotated[Optional[int], typer.Option("--expand-depth", "-d", min=0, max=MAX_DEPTH,
                                                        help="Similarity hops.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=0, max=MAX_LIMIT, show_default=False,
                                                 help="At most this many results (0: all). Options not given here "
                                                      "are the recorded query's.")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: ResultFormatOpt = ResultFormat.table,
) -> None:
    """Retry a recorded query with new keywords (same question, context and options unless given here;
    a new attempt)."""
    rest = list(args or [])
    query_id = None
    if not last:
        if not rest:
            raise UsageError("give a QUERY_ID or --last")
        first = rest.pop(0)
        try:
            query_id = int(first)
        except ValueError:
            raise UsageError(f"QUERY_ID must be a number, got {first!r} (or use --last)") from None
    if rest and not keywords:
        raise UsageError("keywords go after --keywords / -k")
    given = {"min_weight": min_weight, "context_threshold": context_threshold, "expand_depth": expand_depth,
             "limit": limit}
    changes = {name: value for name, value in given.items() if value is not None}
    with open_kb(db, kb) as k:
        options = None
        if changes:   # the recorded query's options, these changed
            qid = k.learning.last_query_id() if query_id is None else query_id
            options = k.learning.recorded_options(qid, **changes)
        data = k.learning.refine(query_id, list(keywords or []) + rest, last=last, options=options)
    emit_result(data, format, "query")


@app.command(short_help="Record which documents helped answer a query")
def feedback(
    query_id: Annotated[Optional[int], typer.Argument(help="The query (see `kbindex history`; omit with --last).",
                                                     show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="The most recent query (as `refine --last`).")] = False,
    helpful: Annotated[Optional[list[str]], typer.Option("--helpful", help="A helpful document (repeatable).")] = None,
    not_helpful: Annotated[Optional[list[str]], typer.Option("--not-helpful", help="A document that did not help "
                                                             "(repeatable).")] = None,
    notes: Annotated[Optional[str], typer.Option("--notes", help="Free-text notes.")] = None,
    attempt_id: Annotated[Optional[int], typer.Option("--attempt-id", help="The attempt that found the documents "
                                                      "(default: the latest attempt that returned each).")] = None,
    show: Annotated[bool, typer.Option("--show", help="Show the feedback recorded for the query.")] = False,
    interactive: Annotated[bool, typer.Option("--interactive", "-i", help="Review the last attempt's results "
                                              "one by one (needs a terminal).")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Record which documents helped answer a query (learning happens later, in `kbindex learn`)."""
    if last == (query_id is not None):
        raise UsageError("give QUERY_ID or --last, one of them")
    with open_kb(db, kb) as k:
        query_id = k.learning.last_query_id() if query_id is None else query_id
        if show:
            if helpful or not_helpful or interactive:
                raise UsageError("--show cannot be combined with marks or --interactive")
            emit(k.learning.feedback_show(query_id), format, rows="feedback",
                 columns=("filepath", "helpful", "attempt_id", "processed", "notes"))
            return
        if not (helpful or not_helpful or interactive):
            raise UsageError("give at least one document: --helpful PATH or --not-helpful PATH (or --interactive)")
        if interactive:
            if not sys.stdin.isatty():
                raise UsageError("--interactive needs a terminal; use --helpful/--not-helpful instead")
            helpful, not_helpful = _interactive(k, query_id)
        result = k.learning.feedback(query_id, helpful or [], not_helpful or [], notes, attempt_id)
        if result.get("not_in_results"):
            warn(f"query {query_id} never returned " + ", ".join(result["not_in_results"])
                 + " (recorded all the same; `kbindex history " + str(query_id) + " --format json` lists what it returned)")
        emit(result, format, rows="recorded", columns=("filepath", "helpful", "attempt_id"))


def _interactive(k: KnowledgeBase, query_id: int) -> tuple[list[str], list[str]]:
    detail = k.learning.history(query_id)
    if not detail["attempts"]:
        raise UsageError(f"query {query_id} has no attempts to review")
    last = detail["attempts"][-1]
    good, bad = [], []
    echo(f"Query {query_id}: {detail['question']}\n", err=True)
    for i, r in enumerate(last.get("top_results", []), 1):
        answer = typer.prompt(f"[{i}] {r['filepath']} helpful? (y/n/s=skip)", default="s", err=True).strip().lower()
        if answer.startswith("y"):
            good.append(r["filepath"])
        elif answer.startswith("n"):
            bad.append(r["filepath"])
    if not good and not bad:
        raise UsageError("no documents marked")
    return good, bad


@app.command(short_help="Turn the feedback into learned items")
def learn(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show suggestions and the recorded questions they "
                                                  "would change; write nothing.")] = False,
    reprocess: Annotated[bool, typer.Option("--reprocess", help="Analyse all feedback again, not only new.")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Analyse unprocessed feedback in one batch and apply what it teaches (under the review learning policy:
    hold it as pending items, `kbindex learned approve` applies them)."""
    with open_kb(db, kb) as k:
        result = k.learning.learn(dry_run=dry_run, reprocess=reprocess)
    if format is Format.json:
        emit_json(result)
        return
    echo(learn_report(result, reprocess=reprocess))


def learn_report(result: Mapping[str, Any], *, reprocess: bool = False) -> str:
    """The design's `learn` output: suggestions by section, each a readable line with its reason (``?``: held for
    review, ``~``: a dry run's)."""
    mark = "~" if result["dry_run"] else "✓"
    entries = counted(result["feedback_analyzed"], f"{'' if reprocess else 'unprocessed '}feedback entry",
                      f"{'' if reprocess else 'unprocessed '}feedback entries")
    lines = [f"Analyzing {entries} from {counted(result['queries'], 'query', 'queries')}...", ""]
    for section, heading in SECTIONS.items():
        items = [s for s in result["suggestions"] if s["section"] == section]
        if not items:
            continue
        lines.append(f"{heading}:")
        for s in items:
            lines.append(f"{'?' if s.get('action') == 'hold' else mark} {s['description']}")
            lines.append(f"  Reason: {s['reason']} (feedback {', '.join(map(str, s['feedback_ids']))})")
        lines.append("")
    counts = result["sections"]
    lines.append("Summary:")
    lines += [f"- {count_line(section, n)}" for section, n in counts.items() if n]
    total = result["summary"]["total"]
    lines += [f"- Total: {counted(total, 'suggestion')}", ""]
    for c in result.get("changes", []):
        moves = ", ".join(f"{m['filepath']} {m['from'] or '-'} -> {m['to'] or '-'}" for m in c["rank_changes"])
        lines.append(f"Would change \"{c['question']}\": {moves or 'scores only'}")
    if result.get("below_policy"):
        lines.append(f"Not learned: {counted(result['below_policy'], 'item')} too few distinct askers support "
                     "(`kbindex learned policy`).")
    if result["dry_run"]:
        lines.append("Dry run: nothing written.")
    elif result["mode"] == "review" and not result["held_for_review"]:
        lines.append("Learning policy review: nothing new to hold for review.")
    else:
        lines.append(f"Applied {counted(result['applied'], 'suggestion')}.")
        if result["held_for_review"]:
            lines.append(f"Held {counted(result['held_for_review'], 'item')} for review "
                         "(`kbindex learned list --pending`, then `kbindex learned approve ID...` or `reject`).")
        lines.append(f"Marked {counted(result['marked_processed'], 'feedback entry', 'feedback entries')} as processed.")
    return "\n".join(lines) + "\n"


learned_app = typer.Typer(help="List or undo what `learn` learned.", no_args_is_help=True)
app.add_typer(learned_app, name="learned", short_help="List or undo what `learn` learned")


@learned_app.command("list")
def learned_list(
    kind: Annotated[Optional[str], typer.Option("--kind", help="association, keyword, similarity or score.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Include removed, pending and rejected items.")] = False,
    pending: Annotated[bool, typer.Option("--pending", help="Only the items held for review.")] = False,
    rejected: Annotated[bool, typer.Option("--rejected", help="Only the rejected items.")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Learned items, their reasons and the feedback behind them.

    Removed and decided items say who removed or decided on them and when.
    """
    if pending and rejected:
        raise UsageError("give --pending or --rejected, not both")
    status = "pending" if pending else "rejected" if rejected else None
    with open_kb(db, kb) as k:
        emit(k.learning.learned_list(kind, all_, status), format, rows="learned",
             columns=("id", "kind", "status", "summary", "reason", "weight", "removed_by", "removed_at",
                      "decided_by"))


@learned_app.command("policy")
def learned_policy(
    set_: Annotated[Optional[str], typer.Option("--set", help="The mode: auto (apply at once) or review "
                                                "(hold as pending until approved).")] = None,
    min_askers: Annotated[Optional[int], typer.Option("--min-askers", help="Distinct askers an item needs.")] = None,
    max_share: Annotated[Optional[float], typer.Option("--max-share", help="Largest share of an item's evidence "
                                                       "one asker may have (above 0, at most 1).")] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Show or set the learning policy.

    Only what is given changes; nothing is written if a value is not valid.
    """
    with open_kb(db, kb) as k:
        if set_ is None and min_askers is None and max_share is None:
            out = k.learning.policy()
        else:
            out = k.learning.set_policy(set_, min_askers, max_share)
    emit(out, format, title="learning policy")


def _review_command(verb: str, doc: str) -> None:
    def command(ids: Annotated[list[int], typer.Argument(help="Learned item ids.")],
                db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table) -> None:
        with open_kb(db, kb) as k:
            out = getattr(k.learning, verb)(ids)
        skipped = out.get("not_removed" if verb == "restore" else "not_pending") or []
        if skipped:
            warn(f"not {'removed' if verb == 'restore' else 'pending'}, nothing done: {', '.join(map(str, skipped))} "
                 "(`kbindex learned list --all` lists them)")
        emit(out, format, title=f"learned {verb}")
    command.__doc__ = doc
    learned_app.command(verb)(command)


_review_command("approve", "Apply pending items, as `learn` under auto would.")
_review_command("reject", "Reject pending items (not proposed again).")
_review_command("restore", "Bring removed items back (applied again).")


@learned_app.command("suggestions")
def learned_suggestions(
    keys: Annotated[Optional[list[str]], typer.Argument(help="Suggestion keys, with --accept or --dismiss.",
                                                        metavar="[KEY]...", show_default=False)] = None,
    accept: Annotated[bool, typer.Option("--accept", help="Write them as typed relations (as `relate`).")] = False,
    dismiss: Annotated[bool, typer.Option("--dismiss", help="Do not suggest them again.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="At most this many (0: all).")] = 20,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Relations the query log suggests, to accept or dismiss.

    From refine chains and questions helped by the same document.
    """
    if accept and dismiss:
        raise UsageError("give --accept or --dismiss, not both")
    if bool(keys) != (accept or dismiss):
        raise UsageError("suggestion keys go with --accept or --dismiss (see `kbindex learned suggestions`)"
                         if keys else "give the suggestion keys to --accept or --dismiss")
    with open_kb(db, kb) as k:
        if not (accept or dismiss):
            emit(k.learning.suggestions(limit), format, rows="suggestions",
                 columns=("key", "keyword1", "type", "keyword2", "queries", "askers", "reason"))
            return
        out: Mapping[str, Any]
        if accept:
            out = k.learning.accept_suggestions(list(keys or []))
        else:
            out = k.learning.dismiss_suggestions(list(keys or []))
    if out["not_suggested"]:
        warn(f"not suggested now, nothing done: {', '.join(out['not_suggested'])} "
             "(`kbindex learned suggestions --limit 0` lists them)")
    if accept:
        emit(out, format, rows="accepted", columns=("key", "id", "keyword1", "type", "keyword2", "score"))
    else:
        emit(out, format, title="learned suggestions --dismiss")


@learned_app.command("remove")
def learned_remove(
    ids: Annotated[Optional[list[int]], typer.Argument(help="Learned item ids.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Undo everything learned.")] = False,
    asker: Annotated[Optional[str], typer.Option("--asker", help="Undo what rests on this asker's feedback "
                                                 "(their marks stay, excluded).", show_default=False)] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Undo learned items (not learned again), or one asker's marks."""
    if asker is not None:
        if ids or all_:
            raise UsageError("--asker goes alone: not with learned item ids or --all")
        with open_kb(db, kb) as k:
            res = k.learning.remove_asker(asker)
        emit({key: v for key, v in res.items() if key != "changes"} if format != Format.json else res,
             format, title="learned remove --asker")
        return
    with open_kb(db, kb) as k:
        out = k.learning.learned_remove(ids, all_)
    if out["already_removed"]:
        warn(f"already removed, nothing to undo: {', '.join(map(str, out['already_removed']))} "
             "(`kbindex learned list --all` lists them)")
    emit(out, format, title="learned remove")


@app.command("clear-history", short_help="Delete recorded queries and their feedback")
def clear_history(
    before: Annotated[Optional[str], typer.Option("--before", help="Only queries last asked before this date "
                                                  "(YYYY-MM-DD or ISO-8601; UTC unless an offset is given).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every recorded query, with its feedback (unprocessed "
                                       "feedback too: run `kbindex learn` first to keep what it teaches).")] = False,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Delete recorded queries with their attempts and feedback (learned items stay): --before DATE or --all."""
    if (before is None) == (not all_):
        raise UsageError("clear-history deletes the queries last asked before a date, or all of them: give "
                         "--before DATE or --all (one of them)")
    with open_kb(db, kb) as k:
        emit(k.learning.clear_history(before, all_=all_), format, title="clear-history")
