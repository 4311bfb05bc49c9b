"""The JSON-schema subset validator and the tolerant JSON parser."""

from __future__ import annotations

import pytest

from kb_indexer.llm.schema import check_schema, parse_json, validate

ITEM = {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 5},
                                         "tag": {"type": "string", "maxLength": 5, "enum": ["a", "bb"]}},
        "required": ["id"], "additionalProperties": False}
SCHEMA = {"type": "object", "properties": {"items": {"type": "array", "items": ITEM, "minItems": 1, "maxItems": 2}},
          "required": ["items"], "additionalProperties": False}


def test_valid_value_has_no_errors():
    assert validate({"items": [{"id": 1, "tag": "a"}, {"id": 5}]}, SCHEMA) == []


@pytest.mark.parametrize("value, fragment", [
    ({}, "missing required property 'items'"),
    ({"items": []}, "fewer than 1"),
    ({"items": [{"id": 1}] * 3}, "more than 2"),
    ({"items": [{"id": 0}]}, "below the minimum"),
    ({"items": [{"id": 9}]}, "above the maximum"),
    ({"items": [{"id": "1"}]}, "expected integer"),
    ({"items": [{"id": True}]}, "expected integer"),
    ({"items": [{"id": 1, "tag": "c"}]}, "is not one of"),
    ({"items": [{"id": 1, "x": 1}]}, "unexpected property 'x'"),
    ({"items": [{"id": 1}], "more": 1}, "unexpected property 'more'"),
    ([], "expected object"),
])
def test_each_violation_is_reported(value, fragment):
    errors = validate(value, SCHEMA)
    assert errors and any(fragment in e for e in errors), errors


def test_enum_does_not_confuse_booleans_and_numbers():
    schema = {"type": "integer", "enum": [0, 1]}
    assert validate(1, schema) == []
    assert validate(True, schema)  # a bool is not an integer here


def test_integer_accepts_integral_floats_only():
    assert validate(3.0, {"type": "integer"}) == []
    assert validate(3.5, {"type": "integer"})


def test_check_schema_requires_bounded_arrays_and_known_keywords():
    check_schema(SCHEMA)
    with pytest.raises(ValueError, match="maxItems"):
        check_schema({"type": "array", "items": {"type": "string"}})
    with pytest.raises(ValueError, match="unsupported"):
        check_schema({"type": "string", "pattern": "^a$"})


@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('Sure! {"a": 1} hope that helps', {"a": 1}),
])
def test_parse_json_tolerates_fences_and_chatter(text, expected):
    assert parse_json(text) == (expected, None)


@pytest.mark.parametrize("text", ["", "   ", '{"a": [1, 1, 1', "no json here"])
def test_parse_json_reports_errors(text):
    value, error = parse_json(text)
    assert value is None and error


def test_a_raw_newline_inside_a_string_is_accepted():
    """Small models write multi-line text inside a JSON string without escaping the newline."""
    from kb_indexer.llm.schema import parse_json
    value, error = parse_json('{"summary": "User prefers Korean.\nThey chose PPO."}')
    assert error is None and value == {"summary": "User prefers Korean.\nThey chose PPO."}
    value, error = parse_json('{"summary": ')
    assert value is None and error.startswith("invalid JSON (")


@pytest.mark.parametrize("text", ['{"score": NaN}', '{"score": Infinity}', '{"score": -Infinity}',
                                  '{"score": 1e400}', 'Sure: {"score": NaN}'])
def test_a_number_that_is_not_finite_is_not_json(text):
    """Python's json takes NaN, Infinity and 1e400 (as inf): an LLM's "score": NaN passed the schema and crashed
    the command when its JSON was printed. It is an invalid answer now (repaired once, else the fallback)."""
    value, error = parse_json(text)
    assert value is None and error


def test_a_number_schema_wants_a_finite_number():
    schema = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}},
              "required": ["score"], "additionalProperties": False}
    assert validate({"score": float("nan")}, schema) and validate({"score": float("inf")}, schema)
    assert validate({"score": 0.5}, schema) == []
