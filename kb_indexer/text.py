"""Small text helpers shared by indexing and search."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timezone

_WS = re.compile(r"\s+")


def normalize_keyword(value: str) -> str:
    """Keywords are compared case-insensitively with whitespace collapsed (NFKC)."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", value)).strip().lower()


def clean_display(value: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFKC", value)).strip()


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
