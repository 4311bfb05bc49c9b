"""``kbindex eval``: the index's ranking scored on relevance judgements, beside a second configuration.

Every judged question (:mod:`kb_indexer.learn.judgements`) is asked through the API's ``query`` (the path of
``kbindex query``, nothing recorded in the history) with 100 results, once per configuration, the two
configurations one after the other for each question. Scores:

- nDCG@10: the DCG of the first 10 results, gain ``2^grade - 1`` at rank ``r`` discounted by ``log2(r + 1)``,
  over the DCG of the ideal ranking of the question's judgements (relevant documents that are not indexed
  included: no ranking reaches 1 then);
- Recall@100: the relevant documents among the first 100 results over the relevant documents judged.

Means are over the judged questions. With a comparison, a question is a win when the base configuration (the
index as it is, unless ``--base`` or ``--method`` say otherwise) has the higher nDCG@10, a loss when the
comparison has, a tie within 1e-9; ``p_value`` is the two-sided sign test of wins against losses.

A configuration is a spec of query options on top of the base's: ``no-learned`` (learned associations off:
``use_learned=false``), ``method=NAME``, or ``KEY=VALUE`` pairs separated by commas (``expand_depth=0,
min_weight=0.5``); a list value goes on after the comma (``types=synonym,narrower``, ``weights=narrower:0.9,
synonym:1``, ``column_weights=1,1,2,0.5``). Each is checked as :class:`QueryOptions` checks it.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from kb_indexer.errors import UsageError, ValidationError
from kb_indexer.learn.judgements import Judgements, Question, describe, judgements
from kb_indexer.search.options import QueryOptions
from kb_indexer.store.dbapi import Connection

NDCG_AT, RECALL_AT = 10, 100
TIE = 1e-9
#: (question, keywords, options) -> the API's query result
Ask = Callable[[str, "list[str] | None", QueryOptions], Mapping[str, Any]]



def _bool(value: str) -> bool:
    low = value.lower()
    if low in ("true", "yes", "on", "1"):
        return True
    if low in ("false", "no", "off", "0"):
        return False
    raise ValueError(value)


FLAGS = {"no-learned": {"use_learned": False}, "learned": {"use_learned": True}}
_LISTS = ("types", "weights", "column_weights")
_SCALARS: dict[str, Callable[[str], Any]] = {
    "method": str, "expand_depth": int, "min_weight": float, "context_threshold": float, "prf": _bool,
    "use_learned": _bool}
_ALIASES = {"threshold": "min_weight", "depth": "expand_depth", "learned": "use_learned"}
_FIXED = {"limit": f"eval ranks {RECALL_AT} results (Recall@{RECALL_AT})", "record": "eval records nothing",
          "explain": "eval reads the ranking only", "context": "a recorded question's own context is used"}


# -- metrics -------------------------------------------------------------------------------------------------
def dcg(grades: Sequence[int]) -> float:
    """Discounted cumulative gain of grades in rank order: gain ``2^g - 1``, discount ``log2(rank + 1)``."""
    return sum((2.0 ** g - 1) / math.log2(rank + 1) for rank, g in enumerate(grades, 1) if g > 0)


def ndcg_at(ranked: Sequence[str], grades: Mapping[str, int], k: int = NDCG_AT) -> float:
    """nDCG@k of a ranking of document keys against ``grades`` (key -> grade; unjudged keys are grade 0)."""
    ideal = dcg(sorted((g for g in grades.values() if g > 0), reverse=True)[:k])
    return dcg([grades.get(d, 0) for d in ranked[:k]]) / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], grades: Mapping[str, int], k: int = RECALL_AT) -> float:
    """The share of the relevant keys (grade > 0) among the first ``k`` of ``ranked``."""
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def sign_test(wins: int, losses: int) -> float | None:
    """Two-sided exact sign test of ``wins`` against ``losses`` (ties left out); None when there are none."""
    n = wins + losses
    if not n:
        return None
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / (1 << n)
    return min(1.0, 2.0 * tail)


# -- configurations ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    name: str
    options: QueryOptions


def config(spec: str | QueryOptions | None, base: QueryOptions, default_name: str) -> Config:
    """The configuration ``spec`` names on top of ``base`` (a :class:`QueryOptions`: used as it is)."""
    if isinstance(spec, QueryOptions):
        opts, name = spec, default_name
    elif spec is None or isinstance(spec, str) and not spec.strip():
        opts, name = base, default_name
    elif isinstance(spec, str):
        opts, name = base.replace(**parse_spec(spec)), spec.strip()
    else:
        raise UsageError(f"a configuration is a spec such as 'no-learned' or 'method=fulltext', or QueryOptions; "
                         f"got {type(spec).__name__}")
    return Config(name, opts.replace(limit=RECALL_AT, record=False, explain=False))


def parse_spec(spec: str) -> dict[str, Any]:
    """The option changes a spec names (see the module's docstring)."""
    changes: dict[str, Any] = {}
    key: str | None = None
    for piece in (p.strip() for p in spec.split(",")):
        if not piece:
            continue
        if "=" not in piece:
            if piece.lower() in FLAGS:
                changes.update(FLAGS[piece.lower()])
                key = None
            elif key in _LISTS:
                changes[key].append(piece)
            else:
                raise UsageError(f"{piece!r} in {spec!r} is not KEY=VALUE; a configuration is no-learned, "
                                 f"method=NAME or KEY=VALUE pairs ({', '.join(sorted([*_SCALARS, *_LISTS]))})")
            continue
        name, _, value = (s.strip() for s in piece.partition("="))
        key = name.lower().replace("-", "_")
        key = _ALIASES.get(key, key)
        if key in _FIXED:
            raise UsageError(f"{name} cannot be set in an eval configuration: {_FIXED[key]}")
        if key in _LISTS:
            changes[key] = [value]
        elif key in _SCALARS:
            changes[key] = _value(key, value)
        else:
            raise UsageError(f"unknown option {name!r} in {spec!r}; expected no-learned or one of "
                             f"{', '.join(sorted([*_SCALARS, *_LISTS]))}")
    return {k: _list_value(k, v) if k in _LISTS else v for k, v in changes.items()}


def _value(key: str, value: str) -> Any:
    try:
        return _SCALARS[key](value)
    except ValueError:
        kind = {int: "a whole number", float: "a number", _bool: "true or false"}.get(_SCALARS[key], "a value")
        raise UsageError(f"{key}={value!r}: expected {kind}") from None


def _list_value(key: str, values: list[str]) -> Any:
    parts = [p for v in values for p in v.split("+") if p.strip()]
    if key == "types":
        return tuple(parts)
    try:
        if key == "column_weights":
            return tuple(float(p) for p in parts)
        pairs = [p.split(":", 1) for p in parts]
        return {t.strip(): float(w) for t, w in pairs}
    except ValueError:
        raise UsageError(f"{key}={','.join(values)!r}: expected " + (
            "four numbers (title, summary, keywords, body)" if key == "column_weights" else
            "TYPE:WEIGHT pairs, e.g. weights=narrower:0.9,synonym:1")) from None


def changed_options(opts: QueryOptions) -> dict[str, Any]:
    """The options that differ from the defaults (``limit`` and ``record``, which eval sets, left out)."""
    default = QueryOptions().to_dict()
    return {k: v for k, v in opts.to_dict().items() if v != default.get(k) and k not in ("limit", "record")}


# -- the run -------------------------------------------------------------------------------------------------
@dataclass
class _Scores:
    config: Config
    ndcg: list[float] = dataclasses.field(default_factory=list)
    recall: list[float] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    methods: dict[str, int] = dataclasses.field(default_factory=dict)
    lexical: int = 0     # semantic or hybrid questions that ran without vectors

    def ask(self, ask: Ask, q: Question) -> None:
        opts = self.config.options.replace(context=q.context) if q.context else self.config.options
        start = time.perf_counter()
        out = ask(q.text, q.keywords, opts)
        self.seconds += time.perf_counter() - start
        ranked = [r["filepath"] for r in out["results"]]
        self.ndcg.append(ndcg_at(ranked, q.grades))
        self.recall.append(recall_at(ranked, q.grades))
        method = str(out["query"]["method"])
        self.methods[method] = self.methods.get(method, 0) + 1
        self.lexical += bool(out.get("semantic") and not out["semantic"].get("used"))

    def means(self) -> tuple[float, float]:
        n = len(self.ndcg) or 1
        return sum(self.ndcg) / n, sum(self.recall) / n

    def summary(self) -> dict[str, Any]:
        ndcg, recall = self.means()
        return {"name": self.config.name, "options": changed_options(self.config.options),
                "ndcg_at_10": round(ndcg, 4), "recall_at_100": round(recall, 4),
                "seconds": round(self.seconds, 3), "methods": dict(sorted(self.methods.items())),
                "lexical_fallbacks": self.lexical}


def evaluate(ask: Ask, judged: Judgements, base: Config, compare: Config | None) -> dict[str, Any]:
    """Both configurations' scores on the judged questions, and each question's."""
    if not judged.questions:
        skipped = f"{judged.unjudged} without one" + (
            f", {judged.without_text} judged ids with no question text" if judged.without_text else "")
        raise ValidationError(f"no judged question to score: none has a relevant document ({skipped})")
    runs = [_Scores(base)] + ([_Scores(compare)] if compare else [])
    first = judged.questions[0]
    ask(first.text, first.keywords, base.options)   # untimed: the first query of a process loads what all use
    for i, q in enumerate(judged.questions):
        # One after the other per question (a change to the index meanwhile meets both), which first in turn
        # (the second of a question finds what the first read in the caches).
        for run in (runs if i % 2 == 0 else runs[::-1]):
            run.ask(ask, q)
    rows = []
    for i, q in enumerate(judged.questions):
        row: dict[str, Any] = {"id": q.id, "question": q.text or ", ".join(q.keywords or []),
                               "relevant": len(q.grades), "ndcg_at_10": round(runs[0].ndcg[i], 4),
                               "recall_at_100": round(runs[0].recall[i], 4)}
        if compare:
            row.update(compare_ndcg_at_10=round(runs[1].ndcg[i], 4),
                       compare_recall_at_100=round(runs[1].recall[i], 4),
                       delta=round(runs[0].ndcg[i] - runs[1].ndcg[i], 4))
        rows.append(row)
    return {"judgements": describe(judged), "base": runs[0].summary(),
            "compare": runs[1].summary() if compare else None, **_comparison(runs), "questions": rows,
            "count": len(rows)}


def _comparison(runs: list[_Scores]) -> dict[str, Any]:
    """The base's mean differences from the comparison, its wins, losses and ties (None without one)."""
    if len(runs) < 2:
        return dict.fromkeys(("delta_ndcg_at_10", "delta_recall_at_100", "wins", "losses", "ties", "p_value"))
    deltas = [a - b for a, b in zip(runs[0].ndcg, runs[1].ndcg)]
    wins, losses = sum(d > TIE for d in deltas), sum(d < -TIE for d in deltas)
    p = sign_test(wins, losses)
    (n0, r0), (n1, r1) = runs[0].means(), runs[1].means()
    return {"delta_ndcg_at_10": round(n0 - n1, 4), "delta_recall_at_100": round(r0 - r1, 4), "wins": wins,
            "losses": losses, "ties": len(deltas) - wins - losses, "p_value": float(f"{p:.3g}") if p is not None else None}


def run(conn: Connection, ask: Ask, qrels: str | os.PathLike[str] | None,
        queries: str | os.PathLike[str] | None = None, *,
        base: str | QueryOptions | None = None, compare: str | QueryOptions | None = None) -> dict[str, Any]:
    """``kbindex eval``: the judgements ``qrels`` and ``queries`` name, scored with ``base`` (None: the index as
    it is) and, when given, ``compare`` (a spec on top of ``base``'s options, or QueryOptions)."""
    base_config = config(base, QueryOptions(), "as it is")   # bad options are bad usage before a file is read
    other = config(compare, base_config.options, "compare") if compare is not None else None
    files = [_path_arg(qrels, "qrels"), _path_arg(queries, "queries")]
    return evaluate(ask, judgements(conn, *files), base_config, other)


def _path_arg(value: str | os.PathLike[str] | None, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise UsageError(f"{name} must be a file path (a string), got {type(value).__name__}")
