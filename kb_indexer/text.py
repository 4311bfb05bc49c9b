"""Small text helpers shared by indexing and search."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timezone
from functools import lru_cache

_WS = re.compile(r"\s+")


@lru_cache(maxsize=1 << 16)
def normalize_keyword(value: str) -> str:
    """Keywords are compared case-insensitively with whitespace collapsed (NFKC). Cached: a sync meets
    the same keywords again and again."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", value)).strip().lower()


def clean_display(value: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFKC", value)).strip()


# What a terminal would act on rather than show: ESC sequences (CSI; OSC, DCS, SOS, PM and APC strings up to
# their terminator; two-character ESC sequences) and their 8-bit C1 forms, then any other C0/C1 control
# (tab and newline kept; a CR of a CRLF becomes the newline), DEL, and the bidirectional embedding,
# override and isolate characters (U+202A-U+202E, U+2066-U+2069) and marks (U+200E, U+200F, U+061C) that make
# text read in another order.
_TERMINAL_STRINGS = re.compile(r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)")
_TERMINAL_SEQUENCES = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?|\x1b[ -/]*[0-~]?")
_TERMINAL_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(value: str) -> str:
    """``value`` with nothing a terminal would interpret (see above): user and model text (titles, paths,
    keywords, snippets, answers) is shown, never acted on. JSON output needs none of this."""
    if value.isprintable():   # the usual case, in C: no control, format or separator character
        return value
    value = _TERMINAL_SEQUENCES.sub("", _TERMINAL_STRINGS.sub("", value.replace("\r\n", "\n")))
    return _TERMINAL_CONTROLS.sub("", value)


# Characters that show nothing: controls, format characters (zero-width space and joiners, bidi marks),
# separators, and the filler characters of Hangul and Braille that render as blanks.
_INVISIBLE_CATEGORIES = frozenset(("Cc", "Cf", "Zs", "Zl", "Zp"))
INVISIBLE_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def is_blank(value: str) -> bool:
    """Whether ``value`` shows nothing: empty, or only whitespace, controls, format characters (a zero-width
    space), separators and blank fillers."""
    return all(unicodedata.category(c) in _INVISIBLE_CATEGORIES or c in INVISIBLE_FILLERS for c in value)


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


_AGE_UNITS = ((365 * 86400, "year"), (30 * 86400, "month"), (86400, "day"), (3600, "hour"), (60, "minute"))


def age_seconds(iso: str | None, now: datetime | None = None) -> int | None:
    """Whole seconds from an ISO-8601 time (UTC unless it carries an offset) to ``now``; None if unreadable."""
    if not iso:
        return None
    try:
        then = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return max(0, int(((now or datetime.now(timezone.utc)) - then).total_seconds()))


def age_phrase(seconds: int | None) -> str | None:
    """"just now", "5 minutes ago", "1 hour ago", "2 days ago", ... (whole units, rounded down)."""
    if seconds is None:
        return None
    for size, unit in _AGE_UNITS:
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "just now"
