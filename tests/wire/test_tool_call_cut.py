"""A tool call cut by the output cap is a truncation (`tools.call_cut`, a warning), not a wire or
tool-parser fault; the same broken arguments without a cut stop reason are still caught.

Found running the suite against Gemma 3 270M on llama.cpp and vLLM: the model wrote into a forced
call's arguments until max_tokens, the stream ended with finish_reason length (stop_reason
max_tokens) inside them, and the suite blamed the engine's tool parser.
"""

from __future__ import annotations

import json

import make_stream_fixtures as mk
import pytest
from wire_helpers import body, index

from conformance.checks import tools
from conformance.checks.exchange import check_exchange
from conformance.core.registry import get
from conformance.net.transport import RawExchange
from conformance.wire import CHAT
from conformance.wire.anthropic import grammar as anthropic
from conformance.wire.chat import grammar as openai

ANTHROPIC_TOOLS = [{"name": "Write", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["file_path", "content"]}},
    {"name": "Ls", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {
    "type": "object", "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}},
    "required": ["filePath", "content"]}}},
    {"type": "function", "function": {"name": "read", "parameters": {
        "type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]}}}]
A_REQUEST = {"model": mk.MODEL, "max_tokens": 64, "stream": True, "tools": ANTHROPIC_TOOLS,
             "messages": [{"role": "user", "content": "write the notes"}]}
O_REQUEST = {**mk.REQ_AUTO, "tools": OPENAI_TOOLS}
CUT_WRITE = ['{"filePath": "/work/project/notes.md", ', '"content": "# Notes\\n\\n- caf']


def errors(report) -> set[str]:
    return {v.check_id for v in report.violations if v.is_error}


def fixture(name: str) -> dict:
    [f] = [f for f in index() if f["file"] == name]
    return f


def warnings(verdict) -> list:
    return [x for x in verdict.violations if x.severity == "warning"]


def exchange(raw_body: bytes, request: dict, api: str):
    path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"
    raw = RawExchange("POST", f"http://127.0.0.1:1{path}", {}, b"{}", status=200,
                      response_headers={"content-type": "text/event-stream"}, chunks=[(0.01, raw_body)])
    return check_exchange(raw, request, wire=api, turn=1)


# ----------------------------------------------------------------------------- OpenAI wire
def o_stream(*calls: tuple[str, list[str]], finish: str) -> list:
    items = [mk.o_chunk([mk.o_delta({"role": "assistant", "content": None})])]
    for i, (name, fragments) in enumerate(calls):
        items += mk.o_tool_call(i, f"call_{i}", name, fragments)
    return [*items, mk.o_chunk([mk.o_delta({}, finish)]), mk.o_chunk([], usage=mk.USAGE), "[DONE]"]


def o_check(items: list):
    return openai.check_stream(mk.o_sse(items), request=O_REQUEST)


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_openai_stream_cut_inside_the_last_call_is_no_wire_fault(finish):
    r = o_check(o_stream(("write", CUT_WRITE), finish=finish))
    assert r.ok and r.violations == [] and r.message["finish_reason"] == finish


def test_openai_stream_same_arguments_without_a_cut_still_fail():
    r = o_check(o_stream(("write", CUT_WRITE), finish="tool_calls"))
    assert errors(r) == {"openai.stream.tool_arguments_json"}


def test_openai_stream_only_the_last_call_can_be_cut():
    r = o_check(o_stream(("read", ['{"filePath": "/a']), ("write", CUT_WRITE), finish="length"))
    [v] = r.errors
    assert v.check_id == "openai.stream.tool_arguments_json" and v.where.pointer == "/choices/0/tool_calls/0/function/arguments"


def _o_response(arguments: list[str], finish: str) -> bytes:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
             for i, (n, a) in enumerate(zip(["read", "write"][-len(arguments):], arguments, strict=True))]
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": mk.OAI_MODEL,
                       "choices": [{"index": 0, "finish_reason": finish, "message": {
                           "role": "assistant", "content": None, "tool_calls": calls}}],
                       "usage": mk.USAGE}).encode()


def test_openai_response_cut_inside_the_last_call_is_no_wire_fault():
    cut = "".join(CUT_WRITE)
    assert openai.check_response(_o_response([cut], "length"))[1] == []
    assert [v.check_id for v in openai.check_response(_o_response([cut], "tool_calls"))[1]] == [
        "openai.response.tool_arguments_json"]
    [v] = openai.check_response(_o_response(['{"filePath": "/a', cut], "length"))[1]
    assert v.where.pointer == "/choices/0/message/tool_calls/0/function/arguments"


# ----------------------------------------------------------------------------- Anthropic wire
def a_stream(*blocks: tuple[str, list[str]], reason: str | None, stop: bool = True) -> list[dict]:
    evs = [mk.a_start(), *mk.a_text_block(0, ["Writing."])]
    for i, (name, fragments) in enumerate(blocks, start=1):
        evs += mk.a_tool_block(i, f"toolu_0{i}", name, fragments)
    if reason is not None:
        evs += mk.a_end(reason, 64) if stop else mk.a_end(reason, 64)[:1]
    return evs


def a_check(evs: list[dict]):
    return anthropic.check_stream(mk.sse(evs), request=A_REQUEST)


@pytest.mark.parametrize("reason", ["max_tokens", "model_context_window_exceeded"])
def test_anthropic_stream_cut_inside_the_last_tool_block_is_no_wire_fault(reason):
    r = a_check(a_stream(("Write", mk.WRITE_ARGS[:1] + [mk.CUT_ARGS]), reason=reason))
    assert r.ok and r.violations == []
    assert r.unparsed_tool_input == {"/content/1/input": mk.WRITE_ARGS[0] + mk.CUT_ARGS}
    assert r.message["content"][1]["input"] == {}


def test_anthropic_stream_same_input_without_a_cut_still_fails_at_its_event():
    evs = a_stream(("Write", mk.WRITE_ARGS[:1] + [mk.CUT_ARGS]), reason="tool_use")
    r = a_check(evs)
    [v] = r.violations
    stop = next(i for i, e in enumerate(evs) if e["type"] == "content_block_stop" and e["index"] == 1) + 1
    assert (v.check_id, v.where.event_index, v.where.event_type) == ("anthropic.stream.tool_input_json", stop,
                                                                     "content_block_stop")


def test_anthropic_stream_cut_short_without_a_stop_reason_keeps_the_violation():
    evs = a_stream(("Write", mk.WRITE_ARGS[:1] + [mk.CUT_ARGS]), reason=None)
    assert errors(a_check(evs)) == {"anthropic.stream.tool_input_json", "anthropic.stream.complete"}


def test_anthropic_stream_only_the_last_tool_block_can_be_cut_and_order_is_kept():
    evs = a_stream(("Ls", ['{"path": "/a']), ("Write", mk.WRITE_ARGS[:1] + [mk.CUT_ARGS]), reason="max_tokens")
    del evs[-2]["delta"]["stop_sequence"]  # a later violation: the held one must still come first
    r = a_check(evs)
    assert [v.check_id for v in r.errors] == ["anthropic.stream.tool_input_json",
                                              "anthropic.stream.stop_sequence_present"]
    assert r.errors[0].where.event_index == next(
        i for i, e in enumerate(evs) if e["type"] == "content_block_stop" and e["index"] == 1) + 1
    assert set(r.unparsed_tool_input) == {"/content/1/input", "/content/2/input"}


# ----------------------------------------------------------------------------- the exchange
@pytest.mark.parametrize("api,name,request_", [
    ("anthropic", "anthropic/valid/max_tokens_inside_tool.sse", A_REQUEST),
    ("openai", "openai/valid/length_inside_tool_call.sse", O_REQUEST),
])
def test_a_cut_call_is_a_call_cut_warning_not_a_failure(api, name, request_):
    v = exchange(body(fixture(name)), request_, api)
    assert v.ok, v.errors
    [w] = warnings(v)
    assert w.check_id == tools.CALL_CUT and w.severity == "warning" and w.where.turn == 1
    reason = "stop_reason 'max_tokens'" if api == "anthropic" else "finish_reason 'length'"
    assert f"cut by the output cap ({reason}) inside the call to" in w.message
    assert "caf" in w.seen  # the arguments text as it arrived
    assert v.outcomes[tools.CALL_CUT] == "warning"
    assert v.outcomes[tools.ARGUMENTS_SCHEMA] == "passed"
    assert v.outcomes["suite.stream.wellformed"] == "passed"


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_same_arguments_without_a_cut_fail_as_before(api):
    if api == "anthropic":
        raw = mk.sse(a_stream(("Write", mk.WRITE_ARGS[:1] + [mk.CUT_ARGS]), reason="tool_use"))
        request_, wire = A_REQUEST, "anthropic.stream.tool_input_json"
    else:
        raw, request_, wire = mk.o_sse(o_stream(("write", CUT_WRITE), finish="tool_calls")), O_REQUEST, \
            "openai.stream.tool_arguments_json"
    v = exchange(raw, request_, api)
    assert set(v.failed_checks) == {wire, tools.ARGUMENTS_SCHEMA}
    assert v.outcomes[tools.CALL_CUT] == "passed" and v.outcomes[tools.ARGUMENTS_SCHEMA] == "failed"
    assert v.outcomes["suite.stream.wellformed"] == "failed"


def test_complete_calls_pass_call_cut():
    v = exchange(body(fixture("openai/valid/tool_call.sse")), O_REQUEST, "openai")
    assert v.ok and v.outcomes[tools.CALL_CUT] == "passed" and v.outcomes[tools.ARGUMENTS_SCHEMA] == "passed"
    text = exchange(body(fixture("openai/valid/text.sse")), O_REQUEST, "openai")
    assert tools.CALL_CUT not in text.outcomes  # no call, nothing to judge


def test_anthropic_cut_input_is_judged_by_its_text_even_when_an_empty_object_would_pass():
    """Ls has no required property: `{}` validates, yet what arrived was cut."""
    v = exchange(mk.sse(a_stream(("Ls", ['{"path": "/wo']), reason="max_tokens")), A_REQUEST, "anthropic")
    [w] = warnings(v)
    assert v.ok and w.check_id == tools.CALL_CUT and "'{\"path\": \"/wo'" in w.seen


# ----------------------------------------------------------------------------- check_arguments
def _o_message(finish: str, *arguments: tuple[str, str]) -> dict:
    return {"finish_reason": finish, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(arguments)]}


def test_schema_failure_of_the_last_call_of_a_cut_turn_is_a_cut():
    msg = _o_message("length", ("write", '{"filePath": "/a"}'))
    [v], _ = tools.check_arguments(msg, {"tools": OPENAI_TOOLS}, CHAT)
    assert v.check_id == tools.CALL_CUT and "violate its schema" in v.message and "'content'" in v.message
    [v], _ = tools.check_arguments({**msg, "finish_reason": "tool_calls"}, {"tools": OPENAI_TOOLS}, CHAT)
    assert v.check_id == tools.ARGUMENTS_SCHEMA


def test_earlier_calls_of_a_cut_turn_are_judged_as_usual():
    msg = _o_message("length", ("read", '{"filePath": "/a'), ("write", "".join(CUT_WRITE)))
    viols, _ = tools.check_arguments(msg, {"tools": OPENAI_TOOLS}, CHAT)
    assert [(v.check_id, v.where.pointer) for v in viols] == [
        (tools.ARGUMENTS_SCHEMA, "/tool_calls/0/function/arguments"),
        (tools.CALL_CUT, "/tool_calls/1/function/arguments")]


def test_a_cut_turn_does_not_excuse_an_unoffered_tool():
    msg = _o_message("length", ("delete_all", '{"x'))
    viols, _ = tools.check_arguments(msg, {"tools": OPENAI_TOOLS}, CHAT)
    assert [v.check_id for v in viols] == [tools.NAME_OFFERED]


def test_call_cut_is_registered_as_a_warning():
    spec = get(tools.CALL_CUT)
    assert spec.severity == "warning" and "max_tokens" in spec.likely_cause
