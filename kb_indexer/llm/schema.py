"""A small JSON-schema validator for the subset kbindex's prompts use (no dependency).

Supported keywords: ``type`` (a name or a list), ``properties``, ``required``,
``additionalProperties`` (bool or schema), ``items``, ``minItems``, ``maxItems``,
``enum``, ``const``, ``minimum``, ``maximum``, ``minLength``, ``maxLength``,
``anyOf``. Anything else is a programming error and raises ``ValueError`` in
:func:`check_schema`, so a schema never silently claims more than is checked.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from kb_indexer.limits import MAX_JSON_DEPTH, json_depth

SUPPORTED = {"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
             "enum", "const", "minimum", "maximum", "minLength", "maxLength", "anyOf", "description", "title"}
_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}


def numbered_ratings(n: int, top: int) -> dict[str, Any]:
    """The schema of a batch judgement: an object mapping ``"1"`` .. ``"n"`` each to an integer 0..``top``
    (an enum, which grammar-constrained servers cannot leave)."""
    keys = [str(i + 1) for i in range(n)]
    rating = {"type": "integer", "enum": list(range(top + 1))}
    return {"type": "object", "properties": {k: rating for k in keys}, "required": keys,
            "additionalProperties": False}


def check_schema(schema: dict[str, Any], path: str = "$") -> None:
    """Refuse unsupported keywords and unbounded arrays (every array needs ``maxItems``)."""
    if not isinstance(schema, dict):
        raise ValueError(f"{path}: a schema must be an object")
    unknown = set(schema) - SUPPORTED
    if unknown:
        raise ValueError(f"{path}: unsupported schema keyword(s): {', '.join(sorted(unknown))}")
    types = schema.get("type")
    names = types if isinstance(types, list) else [types] if types else []
    for t in names:
        if t not in _TYPES:
            raise ValueError(f"{path}: unknown type {t!r}")
    if "array" in names and "maxItems" not in schema:
        raise ValueError(f"{path}: arrays must be bounded with maxItems")
    for key, sub in (schema.get("properties") or {}).items():
        check_schema(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), dict):
        check_schema(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{path}.*")
    for i, sub in enumerate(schema.get("anyOf") or []):
        check_schema(sub, f"{path}<anyOf {i}>")


def _type_ok(value: Any, t: str) -> bool:
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if t == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    return False


def validate(value: Any, schema: dict[str, Any], path: str = "$", limit: int = 20) -> list[str]:
    """Every way ``value`` breaks ``schema`` (at most ``limit`` messages); empty when valid."""
    errors: list[str] = []
    _validate(value, schema, path, errors, limit)
    return errors[:limit]


def _validate(value: Any, schema: dict[str, Any], path: str, errors: list[str], limit: int) -> None:
    if len(errors) >= limit:
        return
    if "anyOf" in schema:
        if not any(not validate(value, sub, path, limit) for sub in schema["anyOf"]):
            errors.append(f"{path}: matches none of the allowed forms")
            return
    types = schema.get("type")
    if types:
        names = types if isinstance(types, list) else [types]
        if not any(_type_ok(value, t) for t in names):
            errors.append(f"{path}: expected {' or '.join(names)}, got {_describe(value)}")
            return
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"{path}: must be {json.dumps(schema['const'])}")
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        allowed = ", ".join(json.dumps(v) for v in schema["enum"][:12])
        errors.append(f"{path}: {_describe(value)} is not one of {allowed}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']} characters")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: has {len(value)} items, fewer than {schema['minItems']}")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: has {len(value)} items, more than {schema['maxItems']}")
            return
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                _validate(item, schema["items"], f"{path}[{i}]", errors, limit)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(f"{path}: missing required property {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                _validate(item, props[key], f"{path}.{key}", errors, limit)
            elif extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                _validate(item, extra, f"{path}.{key}", errors, limit)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?```\s*$", re.S)


def parse_json(text: str) -> tuple[Any, str | None]:
    """Parse a model's JSON answer, tolerating a code fence, text around one object and raw control
    characters inside strings.

    Returns ``(value, None)``, or ``(None, error message)``.
    """
    if text is None or not str(text).strip():
        return None, "the answer was empty"
    raw = str(text).strip()
    m = _FENCE.match(raw)
    if m:
        raw = m.group(1).strip()
    # strict=False: a raw newline or tab inside a string (small models write multi-line summaries so)
    # is taken as the character it is, not refused
    try:
        return _loads(raw), None
    except ValueError as exc:   # JSONDecodeError, or a number that is not finite (NaN, Infinity, 1e400)
        first_error = f"invalid JSON ({exc})"
    start, end = raw.find("{"), raw.rfind("}")
    if 0 <= start < end:
        try:
            return _loads(raw[start:end + 1]), None
        except ValueError:
            pass
    return None, first_error


def _loads(raw: str) -> Any:
    """The answer parsed; nested deeper than ``MAX_JSON_DEPTH`` (a few KB of brackets) is invalid like any bad
    answer: parsed or not, such a value would break what reads it next (validation, the cache's JSON)."""
    try:
        value = json.loads(raw, strict=False, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise ValueError(f"nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    return value


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def schema_text(schema: dict[str, Any]) -> str:
    """The schema as compact JSON, for prompts."""
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
