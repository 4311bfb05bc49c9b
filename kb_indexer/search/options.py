"""``QueryOptions``: every option of one query, typed, with its defaults and its validation in one place.

Every front end builds one (the CLI from its flags, the MCP ``kb_query`` tool and the chat ``kb_query``
tool from their arguments, ``refine`` from the recorded query's options) and passes it down:
:meth:`kb_indexer.api.KnowledgeBase.query` -> :func:`kb_indexer.search.query.run_query`.

    from kb_indexer.api import KnowledgeBase, QueryOptions
    with KnowledgeBase.open() as kb:
        kb.query("how does AlphaGo work?", options=QueryOptions(limit=5, method="hybrid"))

An invalid option is bad usage (:class:`kb_indexer.errors.UsageError`, exit 2), raised when the object is
built, before anything is searched or recorded. :meth:`QueryOptions.to_dict` is what the history records
with each attempt (``query_attempts.options``); :meth:`QueryOptions.from_dict` reads it back, so
``refine`` repeats a query with the options it ran with.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import InitVar, dataclass
from types import MappingProxyType
from typing import Any, Iterable, Literal, Mapping

from kb_indexer.errors import UsageError
from kb_indexer.limits import check_context, check_text_arg, check_unit_arg, check_utf8
from kb_indexer.defaults import (DEFAULT_CONTEXT_THRESHOLD, DEFAULT_DEPTH, DEFAULT_LIMIT, DEFAULT_MIN_WEIGHT,
                                       MAX_DEPTH, MAX_LIMIT)

# auto | keyword (alias sqlite) | fulltext | semantic | hybrid: see kb_indexer.search.method
Method = Literal["auto", "keyword", "sqlite", "fulltext", "semantic", "hybrid"]
METHODS = ("auto", "keyword", "fulltext", "semantic", "hybrid")
ALIASES = {"sqlite": "keyword"}
COLUMN_NAMES = ("title", "summary", "keywords", "body")


@dataclass(frozen=True)
class QueryOptions:
    """The options of one query (defaults: :mod:`kb_indexer.defaults`).

    - ``context``: the user's context; relations whose stored context does not fit it are down-weighted;
    - ``expand_depth``: similarity hops (0: no expansion);
    - ``min_weight``: the minimum expansion weight (``threshold`` is its older name, accepted when built);
    - ``context_threshold``: the context-match score from which a relation fits ``context``;
    - ``types``: only expand through these similarity types (None: all; comma-separated names are split);
    - ``weights``: type weight overrides, e.g. ``{"narrower": 0.9}``;
    - ``method``: auto, keyword (alias sqlite), fulltext, semantic or hybrid;
    - ``limit``: at most this many results (0: all);
    - ``explain``: each result's score parts and the expansion details;
    - ``column_weights``: full-text weights of title, summary, keywords and body (None: the defaults);
    - ``record``: record the attempt in the history;
    - ``use_learned``: let learned associations lift or lower documents;
    - ``prf``: pseudo-relevance feedback for full text (:mod:`kb_indexer.search.feedback`; knowledge bases
      of 500+ documents): off by default, as it helped Cranfield only, not the held-out collections.
    """

    context: str | None = None
    expand_depth: int = DEFAULT_DEPTH
    min_weight: float = DEFAULT_MIN_WEIGHT
    context_threshold: float = DEFAULT_CONTEXT_THRESHOLD
    types: tuple[str, ...] | None = None
    weights: Mapping[str, float] | None = None
    method: Method = "auto"
    limit: int = DEFAULT_LIMIT
    explain: bool = False
    column_weights: tuple[float, float, float, float] | None = None
    record: bool = True
    use_learned: bool = True
    prf: bool = False
    threshold: InitVar[float | None] = None

    def __post_init__(self, threshold: float | None) -> None:
        _check_int(self.limit, 0, MAX_LIMIT, f"limit must be between 1 and {MAX_LIMIT}, or 0 for all")
        _check_int(self.expand_depth, 0, MAX_DEPTH, f"expand depth must be between 0 and {MAX_DEPTH}")
        self._set("min_weight", _min_weight(self.min_weight, threshold))
        _check_unit("min_weight", self.min_weight)
        _check_unit("context_threshold", self.context_threshold)
        check_method(self.method)
        if self.context is not None:
            check_text_arg(self.context, "context")
            check_context(self.context, "context")
            check_utf8(self.context, "context")
        self._set("types", _types(self.types))
        self._set("weights", _weights(self.weights))
        self._set("column_weights", _column_weights(self.column_weights))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)   # frozen: normalised once, here

    def replace(self, **changes: Any) -> QueryOptions:
        """A copy with ``changes`` (validated like any new options)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every option by name (what the history records with an attempt)."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["types"] = list(self.types) if self.types is not None else None
        out["weights"] = dict(self.weights) if self.weights is not None else None
        out["column_weights"] = list(self.column_weights) if self.column_weights is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryOptions:
        """The options of :meth:`to_dict` (other keys are ignored; missing ones take their defaults)."""
        if not isinstance(data, Mapping):
            raise UsageError(f"query options must be an object, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        given = {k: v for k, v in data.items() if k in names}
        return cls(**given)

    @classmethod
    def from_recorded(cls, data: Mapping[str, Any], **changes: Any) -> QueryOptions:
        """:meth:`from_dict` of options read back from the index (history, an import), with ``changes``
        on top: a recorded option that is not valid any more takes its default instead of making the
        query unusable (``changes`` are checked as always: a bad one is bad usage)."""
        try:
            return cls.from_dict({**data, **changes})
        except UsageError:
            kept = {k: v for k, v in data.items() if _valid_alone(cls, k, v)}
            return cls.from_dict({**kept, **changes})


def _valid_alone(cls: type[QueryOptions], name: str, value: Any) -> bool:
    try:
        cls.from_dict({name: value})
    except UsageError:
        return False
    return True


def check_method(requested: str) -> str:
    """The method a name asks for (an alias resolved); an unknown one is bad usage."""
    method = ALIASES.get(requested, requested)
    if method not in METHODS:
        raise UsageError(f"Unknown method {requested!r}; expected one of: {', '.join(METHODS + tuple(ALIASES))}")
    return method


def _check_int(value: object, low: int, high: int, message: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{message}, got {value!r}")


def _check_unit(name: str, value: object) -> None:
    check_unit_arg(value, name)


def _min_weight(min_weight: float, threshold: float | None) -> float:
    """The minimum expansion weight from ``min_weight`` or its older name ``threshold`` (not two values)."""
    if threshold is None:
        return min_weight
    if min_weight != DEFAULT_MIN_WEIGHT and min_weight != threshold:
        raise UsageError(f"min_weight {min_weight!r} and threshold {threshold!r} are the same setting "
                         "(threshold is its older name); give one")
    return threshold


def _types(types: Iterable[str] | None) -> tuple[str, ...] | None:
    """The similarity types named (comma-separated names split), sorted; None for all."""
    if isinstance(types, str):
        types = [types]
    if types is not None:   # any iterable of names (a list, a dict's keys); a number or a mapping is not one
        names = list(types) if isinstance(types, Iterable) and not isinstance(types, (bytes, Mapping)) else None
        if names is None or not all(isinstance(t, str) for t in names):
            raise UsageError(f"types must be similarity type names, got {types!r}")
        types = names
    from kb_indexer.search.expansion import resolve_types  # lazy: the API re-exports QueryOptions; kbindex
    chosen = resolve_types(types)                          # search's cold start does not need expansion
    return tuple(sorted(chosen)) if chosen else None


def _weights(weights: Mapping[str, float] | None) -> Mapping[str, float] | None:
    """Type weight overrides, checked (read-only: the options are frozen); None when there are none."""
    if not weights:
        return None
    if not isinstance(weights, Mapping):
        raise UsageError(f"weights must map similarity types to numbers, got {weights!r}")
    from kb_indexer.search.expansion import resolve_weights  # lazy: as in _types
    resolve_weights(dict(weights))
    return MappingProxyType({str(t): float(w) for t, w in weights.items()})


def _column_weights(values: Iterable[float] | None) -> tuple[float, float, float, float] | None:
    if values is None:
        return None
    out = tuple(values) if isinstance(values, (list, tuple)) else ()
    if len(out) != len(COLUMN_NAMES) or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                            or not math.isfinite(v) or v < 0 for v in out):
        raise UsageError(f"column_weights must be {len(COLUMN_NAMES)} numbers >= 0 "
                         f"({', '.join(COLUMN_NAMES)}), got {values!r}")
    return (float(out[0]), float(out[1]), float(out[2]), float(out[3]))
