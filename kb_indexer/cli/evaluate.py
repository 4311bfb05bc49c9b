"""eval: the ranking scored on relevance judgements (nDCG@10, Recall@100), beside a second configuration."""

from __future__ import annotations

from typing import Annotated, Any, Mapping, Optional

import typer

from kb_indexer.cli.app import DbOpt, FormatOpt, KbOpt, app, open_kb
from kb_indexer.cli.output import Format, counted, echo, emit_json, warn

SHOWN = 10   # questions the table lists on each side (the JSON lists them all)


@app.command("eval", short_help="Score query on judgements (nDCG@10, Recall@100)")
def eval_(
    queries: Annotated[Optional[str], typer.Option(
        "--queries", "-q", help="A BEIR queries.jsonl ({\"_id\", \"text\"} a line), or a BEIR folder holding "
                                "queries.jsonl and qrels/test.tsv (or qrels.tsv).", show_default=False)] = None,
    qrels: Annotated[Optional[str], typer.Option(
        "--qrels", "-r", help="A qrels file (query-id, corpus-id, score: tab-separated, header line), or "
                              "'feedback': the recorded questions with their helpful and not-helpful marks "
                              "(./feedback names a file of that name).", show_default=False)] = None,
    compare: Annotated[Optional[str], typer.Option(
        "--compare", help="A second configuration on top of the first: no-learned (learned associations off), "
                          "method=NAME, or KEY=VALUE pairs separated by commas (expand_depth, min_weight, "
                          "context_threshold, types, weights, column_weights, prf, use_learned).",
        show_default=False)] = None,
    base: Annotated[Optional[str], typer.Option(
        "--base", help="The first configuration, as --compare takes it (default: the index as it is, "
                       "the options of `kbindex query`).", show_default=False)] = None,
    method: Annotated[Optional[str], typer.Option(
        "--method", "-m", help="The first configuration's method (auto, keyword, fulltext, semantic, hybrid): "
                               "short for --base method=NAME.", show_default=False)] = None,
    db: DbOpt = None, kb: KbOpt = None, format: FormatOpt = Format.table,
) -> None:
    """Ask every judged question through `kbindex query` (100 results, nothing recorded in the history) and
    score the ranking: nDCG@10 and Recall@100, per question and on average, beside a second configuration
    (--compare) with per-question wins, losses and ties."""
    spec = ",".join(p for p in (base, f"method={method}" if method else None) if p) or None
    with open_kb(db, kb) as k:
        stale = k.stale_note()
        if stale:
            warn(stale["message"])
        result = k.learning.evaluate(qrels, queries, base=spec, compare=compare)
    j = result["judgements"]
    if j["unmatched"]:
        warn(f"{counted(j['unmatched'], 'relevant document')} of the judgements {'is' if j['unmatched'] == 1 else 'are'} "
             f"not indexed (e.g. {', '.join(j['unmatched_ids'][:3])}); counted as relevant documents no result found")
    if j["ambiguous"]:
        warn(f"{counted(j['ambiguous'], 'corpus id')} match several indexed documents by file name (e.g. "
             f"{', '.join(j['ambiguous_ids'][:3])}); counted as not indexed (give their paths)")
    if format is Format.json:
        emit_json(result)
        return
    echo(report(result))


def report(result: Mapping[str, Any]) -> str:
    """The table for people: the means of each configuration, the difference, and the questions that
    differ most."""
    j, runs = result["judgements"], [r for r in (result["base"], result["compare"]) if r]
    skipped = [counted(j["unjudged"], "question") + " without a relevant document"] if j["unjudged"] else []
    if j["without_text"]:
        skipped.append(counted(j["without_text"], "judged query id") + " not in the queries file")
    lines = [f"{counted(j['questions'], 'judged question')} ({j['qrels'] if j['source'] == 'feedback' else j['queries']}), "
             f"{counted(j['relevant'], 'relevant document')}" + (f"; skipped: {', '.join(skipped)}" if skipped else ""),
             ""]
    width = max(12, *(len(r["name"]) for r in runs))
    lines.append(f"  {'':{width}}  {'nDCG@10':>8}  {'Recall@100':>10}  {'seconds':>8}  methods")
    for r in runs:
        methods = ", ".join(f"{m} {n}" for m, n in r["methods"].items())
        lines.append(f"  {r['name']:{width}}  {r['ndcg_at_10']:8.4f}  {r['recall_at_100']:10.4f}  "
                     f"{r['seconds']:8.2f}  {methods}")
    fallbacks = {r["name"]: r["lexical_fallbacks"] for r in runs if r["lexical_fallbacks"]}
    which = "; ".join(f"{name}: {counted(n, 'question')}" for name, n in fallbacks.items())
    if len(runs) > 1 and len(fallbacks) == len(runs) and len(set(fallbacks.values())) == 1:
        which = f"{counted(runs[0]['lexical_fallbacks'], 'question')} of each configuration"
    notes = [f"{which} ran semantic or hybrid without vectors (on tags and full text; `kbindex embed` makes "
             "them)"] if fallbacks else []
    if result["compare"] is not None:
        lines += _comparison(result, width)
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _comparison(result: Mapping[str, Any], width: int) -> list[str]:
    first, second = result["base"]["name"], result["compare"]["name"]
    lines = [f"  {'difference':{width}}  {result['delta_ndcg_at_10']:+8.4f}  {result['delta_recall_at_100']:+10.4f}"]
    p = result["p_value"]
    lines += ["", f'"{first}" is better on {counted(result["wins"], "question")}, "{second}" on {result["losses"]}, '
                  f"the same on {result['ties']}" + (f" (sign test p = {p:.2g})" if p is not None else "")]
    better = sorted((q for q in result["questions"] if q["delta"] > 0), key=lambda q: -q["delta"])
    worse = sorted((q for q in result["questions"] if q["delta"] < 0), key=lambda q: q["delta"])
    for name, rows in ((first, better), (second, worse)):
        if rows:
            most = f", the {SHOWN} largest of {len(rows)}" if len(rows) > SHOWN else ""
            lines += ["", f'Better with "{name}" (nDCG@10 difference{most}):']
            lines += [f"  {q['delta']:+.4f}  [{q['id']}] {_short(q['question'])}" for q in rows[:SHOWN]]
    return lines


def _short(text: str, width: int = 90) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[:width - 1] + "…"
