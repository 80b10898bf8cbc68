"""The one bounded parser of outside JSON: json.loads's values, and past the depth or size bound a
ValueError whose reason names the bound, never a RecursionError."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.core import bounded_json
from conformance.core.bounded_json import (
    MAX_DEPTH,
    JsonBoundExceeded,
    copy_value,
    is_bound_reason,
    parse,
    parse_or_reason,
)


def nested(levels: int, *, kind: str = "[") -> str:
    if kind == "[":
        return "[" * levels + "]" * levels
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize("kind", ["[", "{"])
@pytest.mark.parametrize("levels", [1_500, 100_000])
def test_deep_nesting_is_past_the_bound_not_a_recursion_error(kind, levels):
    for text in (nested(levels, kind=kind), nested(levels, kind=kind).encode()):
        with pytest.raises(JsonBoundExceeded, match="nested deeper than"):
            parse(text)
        value, reason = parse_or_reason(text)
        assert value is None and is_bound_reason(reason)


def test_the_bound_is_exact():
    assert parse(nested(MAX_DEPTH)) is not None
    with pytest.raises(JsonBoundExceeded):
        parse(nested(MAX_DEPTH + 1))


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"text": "[" * 5_000 + '\\"{' * 300})
    assert parse(text) == json.loads(text)


def test_size_bound(monkeypatch):
    monkeypatch.setattr(bounded_json, "MAX_BYTES", 10)
    with pytest.raises(JsonBoundExceeded, match="more than the 10"):
        parse(b'{"a": "0123456789"}')


@pytest.mark.parametrize("text", ["[NaN]", "[Infinity]", "[1e400]", '"\\ud800"', '{"a": 1, "a": 2}'])
def test_values_are_json_loads_values_where_msgspec_refuses(text):
    assert repr(parse(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", [b"\xff", "", "{", "[1,]", '{"a" 1}'])
def test_malformed_json_is_a_value_error_that_is_not_the_bound(text):
    value, reason = parse_or_reason(text)
    assert value is None and reason and not is_bound_reason(reason)
    if isinstance(text, str):
        with pytest.raises(json.JSONDecodeError):
            parse(text)


@settings(max_examples=150, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4)))
def test_same_values_as_json_loads(value):
    text = json.dumps(value)
    assert parse(text) == json.loads(text) == parse(text.encode())


_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                       lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4))


@settings(max_examples=200, deadline=None)
@given(_VALUES)
def test_copy_value_is_deepcopy_of_a_parsed_value(value):
    parsed = parse(json.dumps(value))
    copied = copy_value(parsed)
    assert copied == copy.deepcopy(parsed) and json.dumps(copied) == json.dumps(parsed)
    stack = [(parsed, copied)]  # every container a new object: changing the copy leaves the original
    while stack:
        a, b = stack.pop()
        if isinstance(a, dict | list):
            assert a is not b
            stack.extend(zip(a.values(), b.values(), strict=True) if isinstance(a, dict) else zip(a, b, strict=True))


def test_copy_value_hands_other_types_to_deepcopy():
    inner = bytearray(b"x")
    value = {"a": [inner]}
    copied = copy_value(value)
    assert copied == value and copied["a"][0] is not inner
