"""JSON written as it is produced: the text ``json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)``
gives, byte for byte, for a value whose lists may be iterators (written item by item, never held whole) and
whose values may be callables (called when reached: a count known once the rows before it are written).

``kbindex export`` writes an index of millions of rows so, and ``kbindex history --limit 0 --format json``
its queries: memory stays that of one row.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring  # the C encoder of one string
from typing import Any, Callable, Iterator

#: The one JSON layout of kbindex's output (stdout under --format json, the files it writes).
ENCODER = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False)

Write = Callable[[str], Any]


def dumps(value: Any) -> str:
    """``value`` as kbindex prints JSON."""
    return ENCODER.encode(value)


def _scalar(value: Any) -> str | None:
    """The JSON text of a string, number, bool or null as :data:`ENCODER` writes it (None: another kind)."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        if not math.isfinite(value):
            ENCODER.encode(value)   # raises as json.dumps does (allow_nan=False)
        return float.__repr__(value)
    return None


def _nested(value: Any, level: int) -> str:
    """A value written ``level`` levels deep, all at once."""
    text = ENCODER.encode(value)
    return text.replace("\n", "\n" + "  " * level) if level else text


def row_text(row: dict[str, Any], level: int) -> str:
    """A flat object (a table row: strings, numbers, nulls) written ``level`` levels deep; faster than the
    encoder's pure-Python indenting path, with the same text (anything nested goes through the encoder)."""
    if not row:
        return "{}"
    inner = "\n" + "  " * (level + 1)
    parts = []
    for key, value in row.items():
        text = _scalar(value)
        if type(key) is not str or text is None:
            return _nested(row, level)
        parts.append(encode_basestring(key) + ": " + text)
    return "{" + inner + ("," + inner).join(parts) + "\n" + "  " * level + "}"


def write(out: Write, value: Any, level: int = 0) -> None:
    """Write ``value`` to ``out`` as :func:`dumps` would (iterators as lists, callables by their result)."""
    if callable(value):
        value = value()
    if isinstance(value, dict):
        if not value:
            out("{}")
            return
        inner = "\n" + "  " * (level + 1)
        out("{")
        for i, (key, item) in enumerate(value.items()):
            out(("," if i else "") + inner + encode_basestring(str(key)) + ": ")
            write(out, item, level + 1)
        out("\n" + "  " * level + "}")
    elif isinstance(value, Iterator):
        _write_items(out, value, level)
    else:
        out(_nested(value, level))


def _write_items(out: Write, items: Iterator[Any], level: int) -> None:
    inner = "\n" + "  " * (level + 1)
    first = True
    for item in items:
        out(("[" if first else ",") + inner)
        first = False
        if isinstance(item, dict):   # a row: its values are plain JSON, never iterators
            out(row_text(item, level + 1))
        else:
            write(out, item, level + 1)
    out("[]" if first else "\n" + "  " * level + "]")


class Buffered:
    """A text sink for :func:`write` gathering the pieces and passing them on to ``sink`` in blocks of about
    ``size`` characters (one write per block, not per row); :meth:`flush` passes on the rest."""

    def __init__(self, sink: Write, size: int = 1 << 20):
        self.sink, self.size, self.held = sink, size, 0
        self.parts: list[str] = []

    def __call__(self, text: str) -> None:
        self.parts.append(text)
        self.held += len(text)
        if self.held >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.sink("".join(self.parts))
            self.parts, self.held = [], 0
