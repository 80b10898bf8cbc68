"""The OpenAI chunk state machine: the table, tool-call rules, request-dependent rules, mutations."""

from __future__ import annotations

import json

import make_stream_fixtures as mk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wire_helpers import body, fixture_id, fixtures, judge, request

from conformance.wire.base import StreamReport
from conformance.wire.chat import grammar as openai
from conformance.wire.chat.rules import KINDS, RULES, TRANSITIONS
from conformance.wire.chat.stream import StreamMachine
from conformance.wire.sse import SSEEvent

REQ = mk.REQ_AUTO


def errors(report) -> set[str]:
    return {v.check_id for v in report.violations if v.is_error}


def check(items: list, request=REQ) -> StreamReport:
    return openai.check_stream(mk.o_sse(items), request=request)


# ----------------------------------------------------------------------------- the table
SAMPLE = {
    "chunk": mk.o_chunk([mk.o_delta({"content": "x"})]),
    "finish": mk.o_chunk([mk.o_delta({}, "stop")]),
    "usage": mk.o_chunk([], usage=mk.USAGE),
    "empty": {"choices": [], "prompt_filter_results": []},
    "done": "[DONE]",
    "error": {"error": {"message": "boom", "type": "server_error"}},
    "unknown": {"object": "vendor.progress"},
}
REACH = {
    "start": [],
    "streaming": ["chunk"],
    "finished": ["chunk", "finish"],
    "usage": ["chunk", "finish", "usage"],
    "done": ["chunk", "finish", "usage", "done"],
    "errored": ["chunk", "error"],
}


def _feed(m: StreamMachine, kinds: list[str]) -> None:
    for i, kind in enumerate(kinds, start=len(m.events) + 1):
        item = SAMPLE[kind]
        data = item if isinstance(item, str) else json.dumps(item)
        m.feed(SSEEvent(None, data, None, None, i * 10, None, i))


def test_the_samples_cover_every_kind_of_event():
    assert set(SAMPLE) == set(KINDS)


@pytest.mark.parametrize("state", list(REACH))
@pytest.mark.parametrize("kind", list(SAMPLE))
def test_every_state_event_pair_follows_the_table(state, kind):
    m = StreamMachine()
    _feed(m, REACH[state])
    assert m.state == state
    before = len(m.violations)
    _feed(m, [kind])
    new = m.violations[before:]
    check_id, rule = RULES[state]
    if (state, kind) in TRANSITIONS:
        assert m.state == TRANSITIONS[(state, kind)]
        assert not [v for v in new if rule in v.message]
    else:
        [v] = [v for v in new if rule in v.message]
        n = len(REACH[state]) + 1
        assert v.check_id == check_id and f"event #{n}" in v.message and repr(state) in v.message
        assert v.where.event_index == n


# ----------------------------------------------------------------------------- valid streams
@pytest.mark.parametrize("f", fixtures(valid=True, protocol="openai"), ids=fixture_id)
def test_valid_fixture_passes_and_accumulates(f):
    violations, report = judge(f)
    assert not [v for v in violations if v.is_error], violations
    assert report.complete and report.message["finish_reason"] in ("stop", "tool_calls", "length")


def test_accumulated_message_with_parallel_calls_and_usage():
    r = check(mk.o_tool_stream(calls=2))
    assert r.ok
    assert r.message == {
        "id": "chatcmpl-9d3bf2a4c1e84b6f", "model": mk.OAI_MODEL, "role": "assistant", "content": None,
        "tool_calls": [
            {"id": "call_8f0a1b2c3d4e5f60", "type": "function",
             "function": {"name": "read", "arguments": '{"filePath": "/work/project/src/main.py"}'}},
            {"id": "call_1a2b3c4d5e6f7081", "type": "function",
             "function": {"name": "glob", "arguments": '{"pattern": "**/*.py"}'}}],
        "finish_reason": "tool_calls", "usage": mk.USAGE}


def test_reasoning_is_accumulated_as_reasoning_content():
    items = mk.o_text_stream()
    items.insert(1, mk.o_chunk([mk.o_delta({"reasoning": "think"})]))
    r = check(items)
    assert r.ok and r.message["reasoning_content"] == "think" and r.message["content"] == "Hello! How can I help? \u2615"


# ----------------------------------------------------------------------------- request-dependent rules
def test_named_tool_choice_may_finish_with_stop_but_auto_may_not():
    items = mk.o_tool_stream(finish="stop")
    assert check(items, request=mk.REQ_NAMED).ok
    assert errors(check(items, request=REQ)) == {"openai.stream.finish_reason_tool_calls"}
    assert errors(check(items, request=None)) == {"openai.stream.finish_reason_tool_calls"}


def test_usage_chunk_only_required_when_asked():
    items = mk.o_text_stream(usage=False)
    assert check(items, request=mk.REQ_NO_USAGE).ok
    assert errors(check(items, request=REQ)) == {"openai.stream.usage_chunk"}


def test_usage_on_a_chunk_with_choices_is_quoted_as_seen():
    """`seen` quotes the bytes the rule read: usage that arrived on a chunk with an empty delta is
    shown, not "none"."""
    items = mk.o_text_stream(usage=False)
    carrier = mk.o_chunk([{"index": 0, "delta": {}}], usage=mk.USAGE)
    items.insert(-1, carrier)
    (v,) = [v for v in check(items, request=REQ).violations if v.check_id == "openai.stream.usage_chunk"]
    assert v.seen == json.dumps(carrier, separators=(",", ":"), ensure_ascii=False)[:300]
    assert '"choices":[{"index":0,"delta":{}}]' in v.seen and "usage arrived on a chunk" in v.message
    assert v.where.event_index == len(items) - 1  # events count from 1: the chunk before [DONE]
    (none,) = [v for v in check(mk.o_text_stream(usage=False), request=REQ).violations
               if v.check_id == "openai.stream.usage_chunk"]
    assert none.seen == "no chunk with a usage object"


@pytest.mark.parametrize("reason", ["length", "content_filter"])
def test_cut_turns_may_end_with_calls(reason):
    assert check(mk.o_tool_stream(finish=reason)).ok


# ----------------------------------------------------------------------------- tool-call rules
def _tool_items(*deltas) -> list:
    return [mk.o_chunk([mk.o_delta({"role": "assistant"})]),
            *[mk.o_chunk([mk.o_delta({"tool_calls": [d]})]) for d in deltas],
            mk.o_chunk([mk.o_delta({}, "tool_calls")]), mk.o_chunk([], usage=mk.USAGE), "[DONE]"]


FIRST = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": ""}}


@pytest.mark.parametrize("deltas,want", [
    ([{**FIRST, "index": None}], "openai.stream.tool_call_index"),
    ([{k: v for k, v in FIRST.items() if k != "index"}], "openai.stream.tool_call_index"),
    ([{**FIRST, "index": 1}], "openai.stream.tool_call_index"),
    ([{**FIRST, "id": ""}, {"index": 0, "function": {"arguments": "{}"}}], "openai.stream.tool_call_start"),
    ([{**FIRST, "type": None}, {"index": 0, "function": {"arguments": "{}"}}], "openai.stream.tool_call_start"),
    ([{**FIRST, "function": {"name": "", "arguments": "{}"}}], "openai.stream.tool_call_start"),
    ([FIRST, {"index": 0, "function": {"name": "read", "arguments": "{}"}}], "openai.stream.tool_call_once"),
    ([FIRST, {"index": 0, "id": "call_2", "function": {"arguments": "{}"}}], "openai.stream.tool_call_once"),
    ([FIRST, {"index": 0, "function": {"arguments": "{\"a\": 1"}}], "openai.stream.tool_arguments_json"),
    ([FIRST, {"index": 0, "function": {"arguments": "[1]"}}], "openai.stream.tool_arguments_json"),
    ([FIRST, {"index": 0, "function": {"arguments": {"a": 1}}}], "openai.stream.tool_arguments_string"),
], ids=["index-null", "index-missing", "index-gap", "no-id", "no-type", "empty-name", "name-twice", "id-twice",
        "args-truncated", "args-array", "args-object"])
def test_tool_call_delta_rules(deltas, want):
    assert want in errors(check(_tool_items(*deltas)))


def test_empty_arguments_are_a_warning():
    r = check(_tool_items(FIRST))
    assert r.ok and [v.check_id for v in r.violations] == ["openai.stream.tool_arguments_json"]


def test_error_payload_and_garbage_are_recorded():
    r = openai.check_stream(b"data: {not json}\n\ndata: {\"error\": {\"message\": \"oom\"}}\n\n")
    assert errors(r) == {"openai.stream.chunk_json", "openai.stream.error_event"} and not r.complete


# ----------------------------------------------------------------------------- mutations
BASE = mk.o_tool_stream(calls=2)


def _kind(item) -> str:
    if isinstance(item, str):
        return "done"
    if not item["choices"]:
        return "usage"
    c = item["choices"][0]
    if c["finish_reason"]:
        return "finish"
    tc = c["delta"].get("tool_calls")
    if tc:
        return "tool_first" if "id" in tc[0] else "tool_args"
    return "role"


DROP = {"role": None, "tool_first": "openai.stream.tool_call_start", "tool_args": "openai.stream.tool_arguments_json",
        "finish": "openai.stream.grammar", "usage": "openai.stream.usage_chunk", "done": "openai.stream.done"}
DUPLICATE = {"role": None, "tool_first": "openai.stream.tool_call_once",
             "tool_args": "openai.stream.tool_arguments_json", "finish": "openai.stream.grammar",
             "usage": "openai.stream.grammar", "done": "openai.stream.nothing_after_done"}


@pytest.mark.parametrize("i", range(len(BASE)), ids=lambda i: f"{i}-{_kind(BASE[i])}")
def test_dropping_a_chunk_gives_its_violation(i):
    want = DROP[_kind(BASE[i])]
    got = errors(check(BASE[:i] + BASE[i + 1:]))
    assert (want in got) if want else not got, got


@pytest.mark.parametrize("i", range(len(BASE)), ids=lambda i: f"{i}-{_kind(BASE[i])}")
def test_duplicating_a_chunk_gives_its_violation(i):
    want = DUPLICATE[_kind(BASE[i])]
    got = errors(check(BASE[: i + 1] + BASE[i:]))
    assert (want in got) if want else not got, got


def test_reordering_finish_and_usage_and_fragments():
    i = next(i for i, x in enumerate(BASE) if _kind(x) == "finish")
    assert "openai.stream.grammar" in errors(check(BASE[:i] + [BASE[i + 1], BASE[i]] + BASE[i + 2:]))
    j = next(i for i, x in enumerate(BASE) if _kind(x) == "tool_args")
    assert "openai.stream.tool_arguments_json" in errors(check(BASE[:j] + [BASE[j + 1], BASE[j]] + BASE[j + 2:]))
    k = next(i for i, x in enumerate(BASE) if _kind(x) == "usage")
    assert "openai.stream.nothing_after_done" in errors(check(BASE[:k] + [BASE[k + 1], BASE[k]] + BASE[k + 2:]))


@pytest.mark.parametrize("k", range(1, len(BASE)))
def test_truncating_is_reported(k):
    assert "openai.stream.done" in errors(check(BASE[:k]))


VALID = fixtures(valid=True, protocol="openai", kind="stream")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(VALID), st.data())
def test_any_chunking_of_a_valid_stream_gives_the_same_verdict(f, data):
    raw = body(f)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=30)))
    chunks, prev = [], 0
    for c in cuts + [len(raw)]:
        chunks.append(raw[prev:c])
        prev = c
    whole = openai.check_stream(raw, request=request(f))
    split = openai.check_stream(chunks, request=request(f))
    assert [(e.data, e.offset) for e in split.events] == [(e.data, e.offset) for e in whole.events]
    assert split.violations == whole.violations and split.message == whole.message and split.ok


# ----------------------------------------------------------------------------- non-stream and errors
def _resp(message: dict, finish="stop") -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": mk.OAI_MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": mk.USAGE}


def test_non_stream_response_rules():
    msg, vs = openai.check_response(json.dumps(_resp({"role": "assistant", "content": "hi"})).encode())
    assert vs == [] and msg["content"] == "hi" and msg["tool_calls"] == [] and msg["finish_reason"] == "stop"
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"a": 1}'}}
    m = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert openai.check_response(_resp(m, "tool_calls"))[1] == []
    assert [v.check_id for v in openai.check_response(_resp(m, "stop"))[1]] == ["openai.response.finish_reason_tool_calls"]
    assert openai.check_response(_resp(m, "stop"), request=mk.REQ_NAMED)[1] == []
    bad = {**call, "function": {"name": "read", "arguments": "{oops"}}
    assert [v.check_id for v in openai.check_response(_resp({**m, "tool_calls": [bad]}, "tool_calls"))[1]] == [
        "openai.response.tool_arguments_json"]
    assert [v.check_id for v in openai.check_response(b"nope")[1]] == ["openai.response.json"]


def test_error_envelope():
    assert openai.check_error(400, b'{"error": {"message": "bad", "type": "invalid_request_error"}}') == []
    assert {v.check_id for v in openai.check_error(400, b'{"detail": "bad"}')} == {"openai.error.envelope"}
    assert {v.check_id for v in openai.check_error(500, b"Internal Server Error")} == {"openai.error.envelope"}


def test_content_started():
    role = mk.o_sse([mk.o_chunk([mk.o_delta({"role": "assistant", "content": ""})])])
    assert not openai.content_started(b": keep-alive\n\n" + role)
    assert openai.content_started(role + mk.o_sse([mk.o_chunk([mk.o_delta({"content": "x"})])]))
    assert openai.content_started(role + mk.o_sse([mk.o_chunk([mk.o_delta({"reasoning_content": "x"})])]))
    assert openai.content_started(role + b"data: [DONE]\n\n")
    assert openai.content_started(b'{"error": {}}')


def test_usage_total_must_add_up():
    items = mk.o_text_stream()
    items[-2] = mk.o_chunk([], usage={**mk.USAGE, "total_tokens": mk.USAGE["total_tokens"] + 17})
    assert errors(check(items)) == {"openai.stream.usage_consistent"}
    resp = _resp({"role": "assistant", "content": "hi"})
    resp["usage"] = {**mk.USAGE, "total_tokens": 1}
    assert [v.check_id for v in openai.check_response(resp)[1]] == ["openai.response.usage_consistent"]
