"""The per-event JSON Schemas: valid draft 2020-12, compiled once, each rule reachable."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from conformance.data import schemas_dir
from conformance.protocols import check_for_pointer, schema_problems, schema_validator

SCHEMAS = sorted(p.stem for p in schemas_dir().glob("*.json"))


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_is_valid_2020_12_and_compiled_once(name):
    schema = json.loads((schemas_dir() / f"{name}.json").read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert schema_validator(name) is schema_validator(name)


def test_every_protocol_event_has_a_schema():
    from conformance.protocols.anthropic import EVENTS

    assert {f"anthropic.{e}" for e in EVENTS} <= set(SCHEMAS)
    assert {"anthropic.message", "openai.chunk", "openai.chat_completion", "openai.error"} <= set(SCHEMAS)


def test_missing_properties_point_at_themselves_once_each():
    problems = schema_problems("anthropic.error", {"detail": "x"})
    assert sorted(p[0] for p in problems) == ["/error", "/type"]


def test_pointer_table_matches_array_positions():
    table = [("chunk", "/choices/*/delta/tool_calls/*/index", "openai.stream.tool_call_index")]
    assert check_for_pointer(table, "chunk", "/choices/0/delta/tool_calls/12/index", "d") == "openai.stream.tool_call_index"
    assert check_for_pointer(table, "chunk", "/choices/0/delta/content", "d") == "d"
