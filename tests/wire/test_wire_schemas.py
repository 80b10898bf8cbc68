"""The per-event JSON Schemas: valid draft 2020-12, compiled once, each rule reachable."""

from __future__ import annotations

import copy
import decimal
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from wire_helpers import body, fixtures

from conformance.wire.anthropic import rules as anthropic_rules
from conformance.wire.base import (
    add_schema_folder,
    check_for_pointer,
    compiled_validator,
    load_json,
    remove_schema_folder,
    schema_names,
    schema_path,
    schema_problems,
    schema_validator,
)
from conformance.wire.sse import decode

SCHEMAS = schema_names()


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_is_valid_2020_12_and_compiled_once(name):
    schema = json.loads(schema_path(name).read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert schema_validator(name) is schema_validator(name)


def test_every_protocol_event_has_a_schema():
    assert {f"anthropic.{e}" for e in anthropic_rules.EVENTS} <= set(SCHEMAS)
    assert {"anthropic.message", "openai.chunk", "openai.chat_completion", "openai.error"} <= set(SCHEMAS)


def test_missing_properties_point_at_themselves_once_each():
    problems = schema_problems("anthropic.error", {"detail": "x"})
    assert sorted(p[0] for p in problems) == ["/error", "/type"]


def test_pointer_table_matches_array_positions():
    table = [("chunk", "/choices/*/delta/tool_calls/*/index", "openai.stream.tool_call_index")]
    assert check_for_pointer(table, "chunk", "/choices/0/delta/tool_calls/12/index", "d") == "openai.stream.tool_call_index"
    assert check_for_pointer(table, "chunk", "/choices/0/delta/content", "d") == "d"


# ----------------------------------------------------------------------------- the validity memo
def _events():
    out = []
    for f in fixtures(kind="stream"):
        for ev in decode(body(f))[0]:
            try:
                data = json.loads(ev.data)
            except ValueError:
                continue
            if isinstance(data, dict):
                name = f"anthropic.{data.get('type')}" if f["protocol"] == "anthropic" else "openai.chunk"
                if name in SCHEMAS:
                    out.append((name, data))
    return out


EVENTS = _events()
ODD_VALUES = [None, "", "x", 0, -1, 1.5, 2.0, True, [], {}, [1], {"a": 1}, "message", "tool_use", "stop"]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _mutate(data, path, op, odd):
    data = copy.deepcopy(data)
    if not path:
        return data
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    if op == "delete" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = odd
    return data


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_memo_never_changes_a_verdict(data):
    name, event = data.draw(st.sampled_from(EVENTS))
    path = data.draw(st.sampled_from(list(_paths(event))))
    op = data.draw(st.sampled_from(["delete", "replace"]))
    odd = data.draw(st.sampled_from(ODD_VALUES))
    mutated = _mutate(event, path, op, odd)
    # warm the memo with the valid original, then judge the mutant both ways
    assert schema_problems(name, event) == schema_problems(name, event, memo=False)
    assert schema_problems(name, mutated) == schema_problems(name, mutated, memo=False)


# ----------------------------------------------------------------------------- the compiled predicates
def _is_valid(name, instance):
    return schema_validator(name).is_valid(instance)


# the schemas judged once per stream event: the fast path must exist for them
HOT = [n for n in SCHEMAS if n.startswith("anthropic.")] + ["openai.chunk", "openai.chat_completion"]
COMPILED = [n for n in SCHEMAS if compiled_validator(n) is not None]


@pytest.mark.parametrize("name", HOT)
def test_every_stream_schema_compiles_to_a_predicate(name):
    assert compiled_validator(name) is not None, f"{name} uses a keyword the predicate compiler does not know"


def test_predicates_agree_with_jsonschema_on_every_fixture_event():
    assert EVENTS
    for name, event in EVENTS:
        assert compiled_validator(name)(event) == _is_valid(name, event), (name, event)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_predicates_agree_with_jsonschema_on_mutants(data):
    name, event = data.draw(st.sampled_from(EVENTS))
    path = data.draw(st.sampled_from(list(_paths(event))))
    op = data.draw(st.sampled_from(["delete", "replace"]))
    odd = data.draw(st.sampled_from(ODD_VALUES))
    mutated = _mutate(event, path, op, odd)
    assert compiled_validator(name)(mutated) == _is_valid(name, mutated)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "x", "text_delta", "tool_use", "message", "assistant", "stop", "chat.completion.chunk"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "index", "delta", "text", "message", "usage", "choices", "id", "role", "content"]),
        kids, max_size=4),
    max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(COMPILED), _JSON)
def test_predicates_agree_with_jsonschema_on_arbitrary_json(name, value):
    assert compiled_validator(name)(value) == _is_valid(name, value)


# every shape of subschema under `required` and `items` the compiler treats apart: with a type,
# a const or an enum first (they reject a missing property themselves), or none of them
_SHAPES = {"type": "object", "required": ["any", "short", "low", "obj", "fixed", "choice", "typed", "list", "loose"],
           "properties": {"any": {}, "short": {"minLength": 1}, "low": {"minimum": 0},
                          "obj": {"properties": {"type": {"const": "x"}}, "required": ["type"]},
                          "fixed": {"const": "x"}, "choice": {"enum": ["x", None]}, "typed": {"type": "string"},
                          "list": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                          "loose": {"items": {"const": "x"}, "maxItems": 2}}}
_SHAPE_KEYS = list(_SHAPES["properties"]) + ["type"]
_SHAPE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "y"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(_SHAPE_KEYS), kids, max_size=3),
    max_leaves=6)


@pytest.fixture(scope="module")
def shapes_predicate(tmp_path_factory):
    folder = tmp_path_factory.mktemp("schemas")
    (folder / "test.shapes.json").write_text(json.dumps(_SHAPES), encoding="utf-8")
    add_schema_folder(folder)
    try:
        yield compiled_validator("test.shapes"), schema_validator("test.shapes")
    finally:
        remove_schema_folder(folder)


_SHAPES_VALID = {"any": 1, "short": "x", "low": 0, "obj": {"type": "x"}, "fixed": "x", "choice": None,
                 "typed": "", "list": [0, 2], "loose": ["x"]}


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(_SHAPES_VALID)), st.booleans(), _SHAPE_VALUES), max_size=2))
def test_predicates_agree_with_jsonschema_on_every_subschema_shape(shapes_predicate, changes):
    """A valid instance with one or two properties deleted or replaced."""
    predicate, validator = shapes_predicate
    value = copy.deepcopy(_SHAPES_VALID)
    for key, delete, replacement in changes:
        if delete:
            value.pop(key, None)
        else:
            value[key] = replacement
    assert predicate(value) == validator.is_valid(value)


def test_predicate_is_conservative_beyond_json_types():
    # jsonschema checks `minimum` on any number; a type the compiler does not know answers False
    # (the full validator decides), never a wrong True
    event = {"type": "content_block_stop", "index": decimal.Decimal(-1)}
    assert compiled_validator("anthropic.content_block_stop")(event) is False


# ----------------------------------------------------------------------------- the fast JSON decoder
def _same(a, b):
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    return type(a) is type(b) and (a == b if not isinstance(a, dict | list) else json.dumps(a) == json.dumps(b))


_JSON_TEXT = st.one_of(
    st.text(alphabet='{}[]":,.-+eE0123456789 \\/\\nabtrufnlsNaIiy\\u00e9', max_size=24),
    _JSON.map(json.dumps),
    st.sampled_from(["NaN", "-Infinity", "1e400", '"\\ud800"', '{"a":1,"a":2}', "123456789012345678901234567890",
                     "-0", "1.5e-400", "[1,]", "0123", '"\\u0001"', '"\x01"', " 1 ", "\ufeff{}", ""]),
)


@settings(max_examples=500, deadline=None)
@given(_JSON_TEXT)
def test_load_json_gives_what_json_loads_gives(text):
    value, err = load_json(text)
    try:
        want, want_err = json.loads(text), None
    except ValueError as exc:
        want, want_err = None, str(exc)
    assert err == want_err
    assert _same(value, want)
    raw = text.encode("utf-8")  # bytes, as a non-stream body arrives
    value, err = load_json(raw)
    try:
        want, want_err = json.loads(raw), None
    except ValueError as exc:
        want, want_err = None, str(exc)
    assert err == want_err
    assert _same(value, want)
