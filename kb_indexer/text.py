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
