"""Nothing a target sends makes the judge raise: arbitrary bytes and arbitrary JSON are violations."""

from __future__ import annotations

import json

import make_stream_fixtures as mk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.wire.anthropic import grammar as anthropic
from conformance.wire.chat import grammar as openai

NAMES = st.sampled_from(["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                         "message_delta", "message_stop", "ping", "error", "x", None])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.sampled_from(["message_start", "content_block_delta", "text_delta", "input_json_delta", "tool_use",
                       "thinking", "text", "function", "[DONE]", "stop", "tool_calls"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "index", "delta", "content_block", "message", "usage", "text", "partial_json",
                         "choices", "tool_calls", "function", "arguments", "finish_reason", "id", "name",
                         "input", "stop_reason", "stop_sequence", "error", "signature", "content"]),
        children, max_size=5),
    max_leaves=20)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(raw):
    for mod in (anthropic, openai):
        report = mod.check_stream(raw, request={"tool_choice": {"type": "function"}, "stream_options": {
            "include_usage": True}})
        assert isinstance(report.violations, list)
        mod.check_response(raw)
        mod.check_error(500, raw)
        mod.content_started(raw)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(NAMES, JSON), max_size=12))
def test_arbitrary_json_events_never_raise(items):
    body = b"".join(
        (f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
        for name, data in items)
    for mod in (anthropic, openai):
        mod.check_stream(body, request=mk.REQ_AUTO)
        for _name, data in items:
            mod.check_response(data if isinstance(data, dict) else json.dumps(data).encode())
            mod.check_error(400, json.dumps(data).encode())


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_valid_streams_with_one_field_replaced_never_raise(data):
    events = data.draw(st.sampled_from([mk.a_text_stream(), mk.a_tool_stream(), mk.a_thinking_stream()]))
    i = data.draw(st.integers(0, len(events) - 1))
    ev = events[i]
    key = data.draw(st.sampled_from(sorted(ev)))
    ev[key] = data.draw(JSON)
    anthropic.check_stream(mk.sse(events))
    items = data.draw(st.sampled_from([mk.o_text_stream(), mk.o_tool_stream(calls=2)]))
    j = data.draw(st.integers(0, len(items) - 2))
    chunk = items[j]
    k = data.draw(st.sampled_from(sorted(chunk)))
    chunk[k] = data.draw(JSON)
    if chunk.get("choices") and isinstance(chunk["choices"], list) and isinstance(chunk["choices"][0], dict):
        chunk["choices"][0]["delta"] = data.draw(JSON)
    openai.check_stream(mk.o_sse(items), request=mk.REQ_AUTO)


def test_openai_chunk_with_non_list_choices_is_a_violation_not_a_crash():
    # found by the property test above: `choices: true` once raised TypeError in the accumulator

    body = (b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":true}\n\n'
            b"data: [DONE]\n\n")
    assert "openai.stream.chunk_schema" in openai.check_stream(body).check_ids
