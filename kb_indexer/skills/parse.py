"""Reading one ``SKILL.md``: YAML front matter (``name``, ``description``) and the markdown body.

The front matter is read by :mod:`kb_indexer.front_matter` (PyYAML's safe loader, aliases refused, size
and nesting bounded), with YAML's types (numbers, booleans, dates). ``name`` and ``description`` are
required non-empty strings; every other key is kept as metadata (JSON-ready: dates become ISO strings; at
most ``MAX_METADATA_BYTES`` of JSON; ``.nan`` and ``.inf`` become null; keys that are one key once
read, as ``1`` and ``true``, or once made text, as ``1`` and ``"1"``, are refused). Anything else is a :class:`SkillParseError` naming what is wrong.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from kb_indexer.front_matter import FrontMatterError, load_front_matter, split_front_matter

MAX_SKILL_BYTES = 1_000_000   # a SKILL.md larger than this is refused (skills are meant to be short)
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 4_000
MAX_METADATA_BYTES = 65_536   # the stored metadata (every key but name and description) as JSON


class SkillParseError(ValueError):
    """A SKILL.md that cannot be indexed; ``str()`` is the reason."""


@dataclass
class ParsedSkill:
    name: str
    description: str
    body: str
    metadata: dict[str, Any] = field(default_factory=dict)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jsonable(value: Any) -> Any:
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        out = {str(k): _jsonable(v) for k, v in value.items()}
        if len(out) < len(value):
            raise SkillParseError(f"front matter keys that are one key as text: {sorted(map(repr, value))[:6]}")
        return out
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float) and not math.isfinite(value):  # NaN and ±.inf are not JSON
        return None
    return value


def _required_text(meta: dict[str, Any], key: str, limit: int) -> str:
    if key not in meta or meta[key] is None:
        raise SkillParseError(f"the front matter has no '{key}'")
    value = meta[key]
    if not isinstance(value, str):
        raise SkillParseError(f"'{key}' must be a string, got {type(value).__name__} ({value!r:.60})")
    value = value.strip()
    if not value:
        raise SkillParseError(f"'{key}' is empty")
    if len(value) > limit:
        raise SkillParseError(f"'{key}' is longer than {limit} characters")
    return value


def _check_name(name: str) -> str:
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        raise SkillParseError(f"'name' must not contain control or format characters (U+{ord(bad):04X} "
                              f"at position {name.index(bad) + 1}): {name!r:.80}")
    if any(c in name for c in "/\\"):
        raise SkillParseError(f"'name' must not contain slashes: {name!r:.80}")
    return name


def parse_skill(data: bytes) -> ParsedSkill:
    """A SKILL.md's bytes as a skill; raises :class:`SkillParseError`."""
    if len(data) > MAX_SKILL_BYTES:
        raise SkillParseError(f"larger than {MAX_SKILL_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkillParseError(f"not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") from None
    if "\x00" in text:
        raise SkillParseError("contains NUL characters (a binary file?)")
    try:
        head, body = split_front_matter(text)   # CRLF and CR line ends become LF
        if head is None:
            raise SkillParseError("no YAML front matter: the file must start with a line '---'")
        meta = load_front_matter(head, typed=True, where="SKILL.md front matter")
    except FrontMatterError as exc:
        raise SkillParseError(str(exc)) from None
    name = _check_name(_required_text(meta, "name", MAX_NAME_CHARS))
    description = _required_text(meta, "description", MAX_DESCRIPTION_CHARS)
    metadata = _jsonable({k: v for k, v in meta.items() if k not in ("name", "description")})
    try:
        size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError) as exc:  # pragma: no cover - safe_load gives only plain types
        raise SkillParseError(f"front matter value that is not JSON data: {exc}") from None
    if size > MAX_METADATA_BYTES:
        raise SkillParseError(f"the front matter's other keys are {size} bytes as JSON (at most "
                              f"{MAX_METADATA_BYTES})")
    return ParsedSkill(name=name, description=description, body=body.strip("\n"), metadata=metadata)
