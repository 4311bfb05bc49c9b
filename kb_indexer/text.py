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
