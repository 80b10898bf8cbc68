"""The Anthropic stream state machine: the table, each rule, mutations, chunking, non-stream, errors."""

from __future__ import annotations

import json

import make_stream_fixtures as mk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wire_helpers import body, fixture_id, fixtures, judge, sse_event

from conformance.wire.anthropic import grammar as anthropic
from conformance.wire.anthropic.rules import ERROR_STATUS, RULES, TRANSITIONS
from conformance.wire.anthropic.stream import StreamMachine
from conformance.wire.base import StreamReport
from conformance.wire.sse import SSEEvent


def errors(report) -> set[str]:
    return {v.check_id for v in report.violations if v.is_error}


def check(events: list[dict]) -> StreamReport:
    return anthropic.check_stream(mk.sse(events))


# ----------------------------------------------------------------------------- the table
SAMPLE = {
    "message_start": mk.a_start(),
    "content_block_start": {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    "content_block_delta": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
    "content_block_stop": {"type": "content_block_stop", "index": 0},
    "message_delta": mk.a_end()[0],
    "message_stop": {"type": "message_stop"},
    "ping": {"type": "ping"},
    "error": {"type": "error", "error": {"type": "api_error", "message": "boom"}},
    "unknown": {"type": "vendor_thing"},
}
REACH = {  # events that bring the machine into each state
    "start": [],
    "message": ["message_start"],
    "block": ["message_start", "content_block_start"],
    "message_delta": ["message_start", "message_delta"],
    "stopped": ["message_start", "message_delta", "message_stop"],
    "errored": ["message_start", "error"],
}


def _feed(machine: StreamMachine, kinds: list[str]) -> None:
    for i, kind in enumerate(kinds, start=len(machine.events) + 1):
        data = SAMPLE[kind]
        machine.feed(SSEEvent(data["type"], json.dumps(data), None, None, i * 100, None, i))


@pytest.mark.parametrize("state", list(REACH))
@pytest.mark.parametrize("kind", list(SAMPLE))
def test_every_state_event_pair_follows_the_table(state, kind):
    m = StreamMachine()
    _feed(m, REACH[state])
    assert m.state == state and not [v for v in m.violations if v.check_id.endswith(("grammar", "after_stop"))]
    before = len(m.violations)
    _feed(m, [kind])
    new = m.violations[before:]
    if (state, kind) in TRANSITIONS:
        assert m.state == TRANSITIONS[(state, kind)]
        assert not [v for v in new if v.check_id in (RULES[state][0],)]
    else:
        check_id, rule = RULES[state]
        [v] = [v for v in new if v.check_id == check_id]
        n = len(REACH[state]) + 1
        name = SAMPLE[kind]["type"]
        # the violation names the event number, the event, the state and the rule
        assert f"event #{n} {name}" in v.message and repr(state) in v.message and rule in v.message
        assert v.where.event_index == n and v.where.byte_offset == n * 100


# ----------------------------------------------------------------------------- valid streams
@pytest.mark.parametrize("f", fixtures(valid=True, protocol="anthropic"), ids=fixture_id)
def test_valid_fixture_accumulates_a_full_message(f):
    violations, report = judge(f)
    assert not [v for v in violations if v.is_error], violations
    assert report.complete
    msg = report.message
    assert msg["type"] == "message" and msg["role"] == "assistant" and msg["stop_reason"]
    assert "stop_sequence" in msg and isinstance(msg["usage"]["output_tokens"], int)
    for pos, block in enumerate(msg["content"]):
        if block["type"] == "tool_use":
            if f"/content/{pos}/input" in report.unparsed_tool_input:  # cut by max_tokens: never closed
                assert msg["stop_reason"] == "max_tokens" and block["input"] == {}
            else:
                assert isinstance(block["input"], dict) and block["input"]


def test_accumulated_message_has_text_thinking_signature_and_parsed_tool_input():
    r = check(mk.a_thinking_stream())
    assert r.ok and r.complete
    thinking, text, tool = r.message["content"]
    assert thinking == {"type": "thinking", "thinking": "The user wants the file read. I should call Read.",
                        "signature": mk.SIG}
    assert text == {"type": "text", "text": "Reading it now."}
    assert tool["input"] == {"file_path": "/work/project/src/main.py", "limit": 200}
    assert r.message["usage"]["output_tokens"] == 141 and r.message["usage"]["input_tokens"] == 1523


def test_empty_signature_is_a_warning_only():
    r = check(mk.a_thinking_stream(signature=""))
    assert r.ok
    [w] = r.violations
    assert (w.check_id, w.severity) == ("anthropic.stream.thinking_signature", "warning")


# ----------------------------------------------------------------------------- single rules
def test_stop_sequence_missing_names_event_and_pointer():
    evs = mk.a_text_stream()
    del evs[-2]["delta"]["stop_sequence"]
    r = check(evs)
    [v] = r.errors
    assert v.check_id == "anthropic.stream.stop_sequence_present"
    assert (v.where.event_index, v.where.event_type, v.where.pointer) == (len(evs) - 1, "message_delta",
                                                                          "/delta/stop_sequence")


@pytest.mark.parametrize("field", ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"])
def test_message_start_needs_every_field(field):
    evs = mk.a_text_stream()
    del evs[0]["message"][field]
    r = check(evs)
    assert "anthropic.stream.message_start_complete" in errors(r)
    assert any(v.where.pointer == f"/message/{field}" for v in r.errors)


def test_message_start_with_content_or_stop_reason_already_set_is_wrong():
    evs = mk.a_text_stream()
    evs[0]["message"]["stop_reason"] = "end_turn"
    evs[0]["message"]["content"] = [{"type": "text", "text": "x"}]
    assert {v.where.pointer for v in check(evs).errors} >= {"/message/stop_reason", "/message/content"}


def test_tool_use_with_non_empty_start_input_is_a_warning():
    evs = mk.a_tool_stream()
    evs[5]["content_block"]["input"] = {"file_path": "x"}
    r = check(evs)
    assert r.ok and [v.check_id for v in r.violations] == ["anthropic.stream.tool_use_start_input"]


def test_tool_input_must_be_an_object():
    evs = mk.a_tool_stream()
    frags = [e for e in evs if e.get("delta", {}).get("type") == "input_json_delta"]
    for e in frags:
        e["delta"]["partial_json"] = ""
    frags[0]["delta"]["partial_json"] = "[1, 2]"
    assert errors(check(evs)) == {"anthropic.stream.tool_input_json"}


def test_tool_without_any_fragment_keeps_empty_input():
    r = check([mk.a_start(), *mk.a_tool_block(0, "toolu_1", "Ls", []), *mk.a_end("tool_use")])
    assert r.ok and r.message["content"][0]["input"] == {}


@pytest.mark.parametrize("reason", ["max_tokens", "pause_turn", "refusal", "model_context_window_exceeded"])
def test_cut_turns_may_end_a_tool_use_block_without_tool_use_reason(reason):
    assert check([mk.a_start(), *mk.a_tool_block(0, "toolu_1", "Ls", ["{}"]), *mk.a_end(reason)]).ok


def test_redacted_thinking_takes_no_delta():
    evs = [mk.a_start(),
           {"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "x"}},
           {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "y"}},
           {"type": "content_block_stop", "index": 0}, *mk.a_end()]
    assert errors(check(evs)) == {"anthropic.stream.delta_block_type"}


def test_delta_for_another_block_than_the_open_one():
    evs = mk.a_tool_stream()
    evs[3]["index"] = 1
    assert errors(check(evs)) == {"anthropic.stream.block_index"}


def test_unknown_delta_and_block_types_are_notes():
    evs = [mk.a_start(),
           {"type": "content_block_start", "index": 0, "content_block": {"type": "future_block"}},
           {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta", "x": 1}},
           {"type": "content_block_stop", "index": 0}, *mk.a_end()]
    r = check(evs)
    assert r.ok and {v.severity for v in r.violations} == {"info"}


def test_error_event_ends_the_stream_as_a_recorded_error():
    evs = mk.a_text_stream()[:3] + [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    r = check(evs)
    assert errors(r) == {"anthropic.stream.error_event"} and not r.complete
    assert "overloaded_error: Overloaded" in r.errors[0].message


def test_bad_json_and_missing_type_are_reported_not_raised():
    body = mk.sse(mk.a_text_stream()[:1]) + b"event: ping\ndata: {not json\n\nevent: ping\ndata: [1]\n\n"
    r = anthropic.check_stream(body)
    assert [v.check_id for v in r.errors].count("anthropic.stream.event_json") == 2


def test_empty_body_is_incomplete():
    r = anthropic.check_stream(b"")
    assert errors(r) == {"anthropic.stream.complete"} and r.message is None and not r.complete


# ----------------------------------------------------------------------------- mutations
BASE = mk.a_thinking_stream()


def _kind(e: dict) -> str:
    if e["type"] == "content_block_delta":
        d = e["delta"]
        if d["type"] == "input_json_delta":
            return "input_json_delta" if d["partial_json"] else "input_json_delta_empty"
        return d["type"]
    return e["type"]


DROP = {  # what dropping one event of each kind must produce (None: still valid)
    "message_start": "anthropic.stream.grammar",
    "content_block_start": "anthropic.stream.grammar",
    "text_delta": None,
    "thinking_delta": None,
    "signature_delta": None,  # an empty signature is only a warning
    "input_json_delta_empty": None,
    "input_json_delta": "anthropic.stream.tool_input_json",
    "content_block_stop": "anthropic.stream.grammar",
    "message_delta": "anthropic.stream.grammar",
    "message_stop": "anthropic.stream.complete",
}
DUPLICATE = {
    "message_start": "anthropic.stream.grammar",
    "content_block_start": "anthropic.stream.grammar",
    "text_delta": None,
    "thinking_delta": None,
    "signature_delta": None,
    "input_json_delta_empty": None,
    "input_json_delta": "anthropic.stream.tool_input_json",
    "content_block_stop": "anthropic.stream.grammar",
    "message_delta": None,  # message_delta+ is legal
    "message_stop": "anthropic.stream.nothing_after_stop",
}


@pytest.mark.parametrize("i", range(len(BASE)), ids=lambda i: f"{i}-{_kind(BASE[i])}")
def test_dropping_an_event_gives_its_violation(i):
    evs = BASE[:i] + BASE[i + 1:]
    want = DROP[_kind(BASE[i])]
    got = errors(check(evs))
    assert (want in got) if want else not got, got


@pytest.mark.parametrize("i", range(len(BASE)), ids=lambda i: f"{i}-{_kind(BASE[i])}")
def test_duplicating_an_event_gives_its_violation(i):
    evs = BASE[: i + 1] + BASE[i:]
    want = DUPLICATE[_kind(BASE[i])]
    got = errors(check(evs))
    assert (want in got) if want else not got, got


REORDER = [  # swap event i and i+1 of BASE -> expected check id
    ("content_block_stop", "content_block_start", "anthropic.stream.grammar"),
    ("message_delta", "message_stop", "anthropic.stream.grammar"),
    ("input_json_delta", "input_json_delta", "anthropic.stream.tool_input_json"),
    ("signature_delta", "content_block_stop", "anthropic.stream.grammar"),
    ("content_block_start", "thinking_delta", "anthropic.stream.grammar"),
]


@pytest.mark.parametrize("a,b,want", REORDER, ids=[f"{a}<->{b}" for a, b, _ in REORDER])
def test_reordering_two_events_gives_its_violation(a, b, want):
    i = next(i for i in range(len(BASE) - 1) if _kind(BASE[i]) == a and _kind(BASE[i + 1]) == b)
    evs = BASE[:i] + [BASE[i + 1], BASE[i]] + BASE[i + 2:]
    assert want in errors(check(evs))


@pytest.mark.parametrize("k", range(1, len(BASE)))
def test_truncating_at_an_event_boundary_is_incomplete(k):
    r = check(BASE[:k])
    assert "anthropic.stream.complete" in errors(r) and not r.complete


@settings(max_examples=60, deadline=None)
@given(st.integers(1, len(mk.sse(BASE)) - 1))
def test_truncating_at_any_byte_is_incomplete(cut):
    body = mk.sse(BASE)[:cut]
    r = anthropic.check_stream(body)
    got = errors(r)
    assert "anthropic.stream.complete" in got or "sse.stream.ends_mid_event" in got


# ----------------------------------------------------------------------------- chunking
VALID = fixtures(valid=True, protocol="anthropic", kind="stream")


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(VALID), st.data())
def test_any_chunking_of_a_valid_stream_gives_the_same_events_and_verdict(f, data):
    raw = body(f)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=30)))
    chunks, prev = [], 0
    for c in cuts + [len(raw)]:
        chunks.append((float(c), raw[prev:c]))
        prev = c
    whole = anthropic.check_stream(raw)
    split = anthropic.check_stream(chunks)
    assert [(e.event, e.data, e.offset) for e in split.events] == [(e.event, e.data, e.offset) for e in whole.events]
    assert split.violations == whole.violations and split.message == whole.message
    assert split.complete and not split.errors


# ----------------------------------------------------------------------------- non-stream and errors
def _message(**over):
    m = {"id": "msg_1", "type": "message", "role": "assistant", "model": mk.MODEL,
         "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn", "stop_sequence": None,
         "usage": {"input_tokens": 3, "output_tokens": 1}, "x_extra": 1}
    m.update(over)
    return {k: v for k, v in m.items() if v != "DROP"}


def test_non_stream_response_valid_and_required_fields():
    msg, vs = anthropic.check_response(json.dumps(_message()).encode())
    assert vs == [] and msg["content"][0]["text"] == "hi"
    _msg, vs = anthropic.check_response(_message(stop_sequence="DROP"))
    assert [v.check_id for v in vs] == ["anthropic.response.stop_sequence_present"]
    _msg, vs = anthropic.check_response(_message(stop_reason=None))
    assert [v.check_id for v in vs] == ["anthropic.response.stop_reason_valid"]
    _msg, vs = anthropic.check_response(_message(content=[{"type": "tool_use", "id": "t", "name": "n", "input": {}}]))
    assert [v.check_id for v in vs] == ["anthropic.response.tool_use_stop_reason"]
    _msg, vs = anthropic.check_response(b"<html>502</html>")
    assert [v.check_id for v in vs] == ["anthropic.response.json"]


@pytest.mark.parametrize("etype,status", sorted(ERROR_STATUS.items()))
def test_error_envelope_each_type_with_its_status(etype, status):
    body = json.dumps({"type": "error", "error": {"type": etype, "message": "m"}}).encode()
    assert anthropic.check_error(status, body) == []
    other = 400 if status != 400 else 404
    [v] = anthropic.check_error(other, body)
    assert v.check_id == "anthropic.error.envelope" and v.is_error


def test_error_envelope_shape_and_gateway_status():
    assert {v.check_id for v in anthropic.check_error(400, b'{"error": {"message": "x"}}')} == {
        "anthropic.error.envelope"}
    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": "m"}}).encode()
    [v] = anthropic.check_error(503, body)
    assert v.severity == "warning"  # a proxy's 503 in front of the API is not the engine's wire


# ----------------------------------------------------------------------------- first content
def test_content_started_ignores_pings_comments_and_message_start():
    head = mk.sse([mk.a_start(), {"type": "ping"}]) + b": keep-alive\n\n"
    assert not anthropic.content_started(b"")
    assert not anthropic.content_started(head)
    assert not anthropic.content_started(head + b"event: content_block_start\ndata: {\"type\":\"content_blo")
    assert anthropic.content_started(head + sse_event(mk.a_text_block(0, ["x"])[0]))
    assert anthropic.content_started(b'{"type":"error","error":{}}')


def test_interleaved_tool_blocks_are_a_warning_and_their_inputs_still_judged():
    """llama.cpp's /v1/messages (xllamacpp 2026.10.11549) opens every parallel tool_use block
    before stopping any: a grammar deviation that Claude Code tolerates (a warning, see
    conformance/wire/anthropic/stream.py), and each block's input is whole and must reach the
    tools check as sent (not {} from a block the machine never closed)."""
    call = '{"file_path": "/p/hello.txt", "content": "hello"}'
    events = [("message_start", {"type": "message_start", "message": {
        "id": "m", "type": "message", "role": "assistant", "content": [], "model": "x", "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 0}}})]
    for i in range(2):
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
            "type": "tool_use", "id": f"t{i}", "name": "Write", "input": {}}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "input_json_delta", "partial_json": call}}))
    events += [("content_block_stop", {"type": "content_block_stop", "index": i}) for i in range(2)]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                  "usage": {"output_tokens": 9}}),
               ("message_stop", {"type": "message_stop"})]
    body = b"".join(sse_event(data) for _, data in events)
    report = anthropic.check_stream(body)
    ids = {v.check_id for v in report.errors}
    assert not ids & {"anthropic.stream.grammar", "anthropic.stream.block_index", "anthropic.stream.tool_input_json"}
    assert "anthropic.stream.grammar" in {v.check_id for v in report.violations if v.severity == "warning"}
    assert [b["input"] for b in report.message["content"]] == [json.loads(call)] * 2
