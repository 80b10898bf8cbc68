"""JSON nested past the bounded parser's depth (3 KB of brackets) is a `suite.limits.json_depth`
violation wherever a wire judge reads a target's JSON: event data, tool arguments, non-stream
bodies and error bodies, on every wire. Never a RecursionError."""

from __future__ import annotations

import json

import make_stream_fixtures as mk
import responses_streams as rs

from conformance.wire.anthropic import grammar as anthropic
from conformance.wire.chat import grammar as chat
from conformance.wire.responses import grammar as responses

JSON_DEPTH = "suite.limits.json_depth"
DEEP = '{"a":' * 1_500 + "1" + "}" * 1_500  # 11 KB; a bare list of brackets is 3 KB


def _event(data: str, name: str | None = None) -> bytes:
    return (f"event: {name}\n" if name else "").encode() + f"data: {data}\n\n".encode()


def test_anthropic_deep_event_data():
    body = mk.sse(mk.a_text_stream()[:2]) + _event(DEEP, "content_block_delta")
    assert JSON_DEPTH in anthropic.check_stream(body).check_ids


def test_anthropic_deep_tool_input():
    events = [mk.a_start(), *mk.a_tool_block(0, "toolu_01", "Read", ['{"file_path": ', DEEP[:-1], "}"]),
              *mk.a_end("tool_use")]
    report = anthropic.check_stream(mk.sse(events))
    assert JSON_DEPTH in report.check_ids
    assert "anthropic.stream.tool_input_json" not in report.check_ids


def test_anthropic_deep_bodies():
    _message, violations = anthropic.check_response(DEEP.encode())
    assert JSON_DEPTH in {v.check_id for v in violations}
    assert JSON_DEPTH in {v.check_id for v in anthropic.check_error(400, DEEP.encode())}


def test_chat_deep_chunk():
    body = mk.o_sse(mk.o_text_stream()[:2]) + _event(DEEP)
    assert JSON_DEPTH in chat.check_stream(body, request=mk.REQ_AUTO).check_ids


def test_chat_deep_tool_arguments_streamed():
    items = mk.o_tool_stream()
    items[2] = mk.o_chunk([mk.o_delta({"tool_calls": [{"index": 0, "function": {"arguments": DEEP}}]})])
    items[3] = mk.o_chunk([mk.o_delta({"tool_calls": [{"index": 0, "function": {"arguments": ""}}]})])
    report = chat.check_stream(mk.o_sse(items), request=mk.REQ_AUTO)
    assert JSON_DEPTH in report.check_ids
    assert "openai.stream.tool_arguments_json" not in report.check_ids


def test_chat_deep_answer_and_tool_arguments():
    answer = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                  "role": "assistant", "content": None, "tool_calls": [
                      {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": DEEP}}]}}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    _message, violations = chat.check_response(json.dumps(answer).encode())
    assert JSON_DEPTH in {v.check_id for v in violations}
    _message, violations = chat.check_response(DEEP.encode())
    assert JSON_DEPTH in {v.check_id for v in violations}


def test_responses_deep_event_and_body():
    body = rs.encode(rs.stream_events([rs.message("hi")])[:2]) + _event(DEEP, "response.output_text.delta")
    assert JSON_DEPTH in responses.check_stream(body).check_ids
    _message, violations = responses.check_response(DEEP.encode())
    assert JSON_DEPTH in {v.check_id for v in violations}
