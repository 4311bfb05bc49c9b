"""Limits on what kbindex accepts, in one place (documented in docs/limits-and-guarantees.md).

Every value a user gives (a keyword, a JSON file, a number, a document) is
checked against these before anything is written, so bad input is refused
with a clear ``invalid_input`` error instead of failing deep inside.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, TypeVar

from kb_indexer import settings
from kb_indexer.errors import UsageError, ValidationError
from kb_indexer.text import INVISIBLE_FILLERS

_T = TypeVar("_T")

# A keyword (tag, relation end, --keywords value) longer than this is refused.
MAX_KEYWORD_CHARS = 200
# JSON files (keywords files, similarities.json, exports) nested deeper than this are refused.
MAX_JSON_DEPTH = 64
# Documents larger than this are indexed up to the limit, with a warning (env KBINDEX_MAX_DOC_BYTES).
DEFAULT_MAX_DOC_BYTES = 4 * 1024 * 1024
# A similarities file (or another JSON file kbindex reads whole) larger than this is refused.
MAX_JSON_FILE_BYTES = 512 * 1024 * 1024
# A .env file larger than this is ignored, with a warning (it holds a few settings).
MAX_ENV_FILE_BYTES = 64 * 1024
# A query's question longer than this is refused (as a skill message: a question, not a document), and so
# is a query with more keywords than MAX_QUERY_KEYWORDS.
MAX_QUERY_CHARS = 20_000
MAX_QUERY_KEYWORDS = 100
MAX_FEEDBACK_MARKS = 1000  # documents marked in one `feedback` (a query shows at most a few hundred)
# A user context (``similar --user-context``, ``query --context``) longer than this is refused: it describes
# the user's situation in a sentence or a paragraph, and goes whole into every LLM prompt.
MAX_CONTEXT_CHARS = 4000
# Ids (query ids, attempt ids) are SQLite integers.
MAX_ID = 2**63 - 1
# kbindex's HTTP servers (`kbindex mcp --transport http`, kb_indexer.http_serving): open connections at most (by
# default also at most half the process's open-file limit), seconds a request's headers may take to arrive, and
# bytes of headers (h11's own default; a bearer token alone may be 4 KiB).
DEFAULT_HTTP_MAX_CONNECTIONS = 256
DEFAULT_HTTP_HEADER_TIMEOUT_S = 10.0
MAX_HTTP_HEADER_BYTES = 16 * 1024
# ... and a request's body within that many seconds of its headers, one second more per this many bytes of it
# received (a 4 MiB body may take 4 minutes; a client trickling one byte a second holds a connection 10 s).
MIN_HTTP_BODY_RATE = 16 * 1024


@dataclass(frozen=True)
class HttpLimits:
    """What the clients of one HTTP server may hold. ``max_connections`` None: the default (at most
    DEFAULT_HTTP_MAX_CONNECTIONS and half the open-file limit: :func:`kb_indexer.http_serving.connection_limit`)."""

    max_connections: int | None = None
    header_timeout_s: float = DEFAULT_HTTP_HEADER_TIMEOUT_S
# A session id (context, skills and chat sessions) is 1 to this many printable characters.
MAX_SESSION_CHARS = 200
# Characters a session id must not hold: controls (ESC, NUL, newline, C1), format characters (bidi
# overrides, zero-width), line and paragraph separators, surrogates.
_NOT_IN_SESSION_IDS = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def max_doc_bytes() -> int:
    raw = settings.text("KBINDEX_MAX_DOC_BYTES")
    if not raw:
        return DEFAULT_MAX_DOC_BYTES
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"KBINDEX_MAX_DOC_BYTES must be a whole number of bytes, got {raw!r}") from None
    if value < 1024:
        raise ValidationError(f"KBINDEX_MAX_DOC_BYTES must be at least 1024, got {value}")
    return value


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """Nesting depth of a parsed JSON value (iterative: no recursion limit); stops counting past ``limit``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def parse_json(text: str, name: str) -> Any:
    """``json.loads`` for user files: invalid JSON, nesting deeper than ``MAX_JSON_DEPTH`` and non-finite
    numbers (NaN, Infinity) are ``invalid_input`` errors, never a crash (a RecursionError)."""

    def _no_constants(token: str) -> Any:
        raise ValidationError(f"{name}: {token} is not a valid JSON number")

    try:
        value = json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{name} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:  # the C parser stops at the interpreter's recursion limit
        raise ValidationError(f"{name} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise ValidationError(f"{name} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def check_utf8(value: str, what: str) -> str:
    """User text that can be encoded as UTF-8 (an argument with bytes that are not UTF-8 arrives with lone
    surrogates): refused here, before SQLite or JSON."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid UTF-8 text: {value[:60].encode('utf-8', 'backslashreplace')!r}; "
                              "pass it as UTF-8") from None
    return value


# Control characters (C0 and C1, DEL) other than tab, newline and carriage return: refused in keywords and
# in what an LLM generates for a keywords file (a NUL made SQLite and the keywords file's reader fail).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# What ``enrich`` generates for a keywords file: a question the document answers, a title, a summary.
MAX_QUESTION_CHARS = 300
MAX_TITLE_CHARS = 200
MAX_SUMMARY_CHARS = 800


def text_problem(value: Any, max_chars: int) -> str | None:
    """What is wrong with a short text (a keyword, a generated question or title), or None: not a string,
    longer than ``max_chars``, or a control character (see ``_CONTROL``)."""
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if len(value) > max_chars:
        return f"is {len(value)} characters long; at most {max_chars} are allowed (starts {value[:40]!r})"
    found = _CONTROL.search(value)
    if found:
        return "contains a NUL character" if found.group() == "\x00" else \
            f"contains the control character {found.group()!r}"
    return None


def check_keyword(value: str, where: str = "keyword") -> str:
    """A keyword as given: a string of at most ``MAX_KEYWORD_CHARS`` characters with no control character."""
    problem = text_problem(value, MAX_KEYWORD_CHARS)
    if problem:
        raise ValidationError(f"{where} {problem}")
    return value


def check_session_id(value: Any) -> str:
    """A session id as given, surrounding whitespace removed: text of 1 to ``MAX_SESSION_CHARS`` printable
    characters. Anything else is bad usage (exit 2), refused before anything is read or written."""
    if not isinstance(value, str):
        raise UsageError(f"a session id must be text, got {type(value).__name__}")
    sid = value.strip()
    if not sid or len(sid) > MAX_SESSION_CHARS:
        raise UsageError(f"a session id must be 1 to {MAX_SESSION_CHARS} characters, got {len(sid)}"
                         + (f" ({sid[:40]!r}...)" if sid else ""))
    bad = next((c for c in sid if unicodedata.category(c) in _NOT_IN_SESSION_IDS or c in INVISIBLE_FILLERS), None)
    if bad is not None:
        raise UsageError(f"a session id must be printable: U+{ord(bad):04X} "
                         f"({unicodedata.name(bad, unicodedata.category(bad))}) in {sid[:60]!r}")
    if unicodedata.normalize("NFKC", sid) != sid:  # "ｓ1" and "s1", "s\u00a01" and "s 1" would look alike
        raise UsageError(f"a session id must be in its plain form: {sid[:60]!r} would be "
                         f"{unicodedata.normalize('NFKC', sid)[:60]!r}")
    return sid


def check_context(value: str, where: str = "context") -> str:
    """A user context of at most ``MAX_CONTEXT_CHARS`` characters (refused beyond, never cut: a cut context
    could mean something else)."""
    if len(value) > MAX_CONTEXT_CHARS:
        raise ValidationError(f"{where} is {len(value)} characters long; at most {MAX_CONTEXT_CHARS} are allowed "
                              "(describe the situation in a paragraph)")
    return value


def check_finite(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def check_id(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise ValidationError(f"{what} must be a whole number from 1 to {MAX_ID}, got {value!r}")
    return value


# -- argument types at the Python API boundary (bad usage, exit 2, naming the parameter) ------------------
def check_text_arg(value: Any, name: str) -> str:
    """A text argument of the Python API (a keyword, a path): anything but a string is bad usage."""
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, got {type(value).__name__}")
    return value


def check_strings(value: Any, name: str, *, optional: bool = False) -> list[str]:
    """A list (or tuple) of strings, e.g. keywords or paths: a lone string is refused (it would be read as
    its characters), as is any other type or item (``optional``: None stands for an empty list)."""
    if value is None and optional:
        return []
    if not isinstance(value, (list, tuple)):
        got = "a string (wrap it in a list)" if isinstance(value, str) else type(value).__name__
        raise UsageError(f"{name} must be a list of strings, got {got}")
    bad = [type(v).__name__ for v in value if not isinstance(v, str)]
    if bad:
        raise UsageError(f"{name} must be a list of strings, got an item of type {bad[0]}")
    return list(value)


def check_unit_arg(value: Any, name: str) -> float:
    """A number from 0 to 1, such as a score or a threshold (a bool, NaN or anything else is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise UsageError(f"{name} must be between 0 and 1, got {value!r}")
    return float(value)


def check_int_arg(value: Any, name: str, low: int, high: int = MAX_ID) -> int:
    """A whole number from ``low`` to ``high`` (a bool or a float is refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def check_limit(value: Any, name: str = "limit") -> int | None:
    """A result limit: a whole number >= 0, or None (0 and None: all)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise UsageError(f"{name} must be a whole number >= 0 (0: all), got {value!r}")
    return value or None


def check_instance(value: object, cls: type[_T], name: str) -> _T | None:
    """An options object of class ``cls`` or None (a dict is refused: build the object, e.g.
    ``QueryOptions(limit=2)``, or ``QueryOptions.from_dict``)."""
    if value is not None and not isinstance(value, cls):
        raise UsageError(f"{name} must be a {cls.__name__} (or None), got {type(value).__name__}"
                         + (f"; build one with {cls.__name__}(...)" if isinstance(value, dict) else ""))
    return value if isinstance(value, cls) else None
