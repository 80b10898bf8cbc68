"""Fuzzing the three wire judges (anthropic, chat, responses), streams and non-stream answers:
random bytes, random nesting and random chunking. The only outcome is a verdict: no exception,
a bound past MAX_DEPTH reported as suite.limits.json_depth, and a stream judged the same
however the network cut it.

The default run keeps each property to a few dozen examples (about a second each); the
`slow` copies run the same properties with many more."""

from __future__ import annotations

import json

import make_stream_fixtures as mk
import pytest
import responses_streams as rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.core.bounded_json import MAX_DEPTH
from conformance.wire.anthropic import grammar as anthropic
from conformance.wire.chat import grammar as chat
from conformance.wire.responses import grammar as responses

JSON_DEPTH = "suite.limits.json_depth"
JUDGES = {"anthropic": anthropic, "chat": chat, "responses": responses}
REQUEST = {"anthropic": None, "chat": mk.REQ_AUTO, "responses": None}
QUICK = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def valid_streams() -> dict[str, list[bytes]]:
    return {
        "anthropic": [mk.sse(mk.a_text_stream()), mk.sse(mk.a_tool_stream()), mk.sse(mk.a_thinking_stream()),
                      mk.sse(mk.a_tool_stream(), nl="\r\n")],
        "chat": [mk.o_sse(mk.o_text_stream()), mk.o_sse(mk.o_tool_stream(calls=2)),
                 mk.o_sse(mk.o_tool_stream(), nl="\r\n")],
        "responses": [rs.encode(rs.stream_events([rs.message("Hello there")])),
                      rs.encode(rs.stream_events([rs.reasoning("thinking"), rs.function_call("read", '{"a": 1}')]))],
    }


STREAMS = valid_streams()
WIRE = st.sampled_from(sorted(JUDGES))


def judge_everything(wire: str, body: bytes) -> set[str]:
    """Every entry point of one wire's judge on `body`; returns the stream verdict's check ids."""
    judge = JUDGES[wire]
    report = judge.check_stream(body, request=REQUEST[wire])
    assert isinstance(report.complete, bool)
    _message, violations = judge.check_response(body, request=REQUEST[wire])
    assert all(v.check_id for v in violations)
    assert isinstance(judge.check_error(400, body), list)
    judge.content_started(body)
    return set(report.check_ids)


@st.composite
def nested_json(draw) -> str:
    """A JSON text nested 0..3*MAX_DEPTH levels, arrays and objects mixed, a scalar at the core."""
    depth = draw(st.integers(0, 3 * MAX_DEPTH))
    kinds = draw(st.lists(st.sampled_from("[{"), min_size=depth, max_size=depth))
    core = json.dumps(draw(st.one_of(st.none(), st.integers(), st.text(max_size=5))))
    opens = "".join("[" if k == "[" else '{"k":' for k in kinds)
    closes = "".join("]" if k == "[" else "}" for k in reversed(kinds))
    return opens + core + closes


def _random_bytes(wire, raw):
    judge_everything(wire, raw)


def _random_nesting(wire, nested, where):
    depth = nested.count("[") + nested.count("{")
    if where == "event":
        body = STREAMS[wire][0]
        head = body[: body.index(b"\n\n") + 2]
        body = head + f"data: {nested}\n\n".encode()
        ids = judge_everything(wire, body)
    elif where == "arguments":
        if wire == "anthropic":
            events = [mk.a_start(), *mk.a_tool_block(0, "toolu_01", "Read", [nested]), *mk.a_end("tool_use")]
            body = mk.sse(events)
        elif wire == "chat":
            items = mk.o_tool_stream()
            items[2] = mk.o_chunk([mk.o_delta({"tool_calls": [{"index": 0, "function": {"arguments": nested}}]})])
            items[3] = mk.o_chunk([mk.o_delta({"tool_calls": [{"index": 0, "function": {"arguments": ""}}]})])
            body = mk.o_sse(items)
        else:
            body = rs.encode(rs.stream_events([rs.function_call("read", nested)]))
        ids = judge_everything(wire, body)
    else:  # a whole non-stream body
        body = nested.encode()
        _message, violations = JUDGES[wire].check_response(body, request=REQUEST[wire])
        ids = {v.check_id for v in violations}
        judge_everything(wire, body)
    # the Responses grammar leaves a function_call's arguments text to the tool checks
    if depth > MAX_DEPTH and not (wire == "responses" and where == "arguments"):
        assert JSON_DEPTH in ids, (wire, where, depth, ids)
    if depth <= MAX_DEPTH:
        assert JSON_DEPTH not in ids, (wire, where, depth, ids)


def _random_chunking(wire, index, cuts):
    body = STREAMS[wire][index % len(STREAMS[wire])]
    whole = JUDGES[wire].check_stream(body, request=REQUEST[wire])
    points = sorted({c % (len(body) + 1) for c in cuts})
    chunks = [(n * 0.001, body[a:b]) for n, (a, b) in enumerate(zip([0, *points], [*points, len(body)], strict=True))]
    cut = JUDGES[wire].check_stream(chunks, request=REQUEST[wire])
    assert cut.check_ids == whole.check_ids and cut.complete == whole.complete
    assert cut.message == whole.message


def _mutated_and_chunked(wire, index, start, length, junk, cuts):
    body = bytearray(STREAMS[wire][index % len(STREAMS[wire])])
    start %= len(body)
    body[start:start + length] = junk
    chunks, at = [], 0
    for c in sorted(c % (len(body) + 1) for c in cuts):
        chunks.append((0.0, bytes(body[at:c])))
        at = c
    chunks.append((0.0, bytes(body[at:])))
    JUDGES[wire].check_stream(chunks, request=REQUEST[wire])
    judge_everything(wire, bytes(body))


BYTES = (WIRE, st.binary(max_size=600))
NESTING = (WIRE, nested_json(), st.sampled_from(["event", "arguments", "body"]))
CHUNKING = (WIRE, st.integers(0, 10), st.lists(st.integers(0, 10**6), max_size=40))
MUTATION = (WIRE, st.integers(0, 10), st.integers(0, 10**6), st.integers(0, 40),
            st.binary(max_size=40) | st.sampled_from([b"\n\n", b"\r", b"data: ", b"[DONE]", b"{", b'"', b"\xff"]),
            st.lists(st.integers(0, 10**6), max_size=12))


@QUICK
@given(*BYTES)
def test_random_bytes_are_a_verdict(wire, raw):
    _random_bytes(wire, raw)


@QUICK
@given(*NESTING)
def test_random_nesting_is_a_verdict_and_past_the_bound_a_named_one(wire, nested, where):
    _random_nesting(wire, nested, where)


@QUICK
@given(*CHUNKING)
def test_random_chunking_gives_the_same_verdict(wire, index, cuts):
    _random_chunking(wire, index, cuts)


@QUICK
@given(*MUTATION)
def test_mutated_streams_in_random_chunks_are_a_verdict(wire, index, start, length, junk, cuts):
    _mutated_and_chunked(wire, index, start, length, junk, cuts)


@pytest.mark.slow
@THOROUGH
@given(*BYTES)
def test_random_bytes_are_a_verdict_thoroughly(wire, raw):
    _random_bytes(wire, raw)


@pytest.mark.slow
@THOROUGH
@given(*NESTING)
def test_random_nesting_thoroughly(wire, nested, where):
    _random_nesting(wire, nested, where)


@pytest.mark.slow
@THOROUGH
@given(*CHUNKING)
def test_random_chunking_thoroughly(wire, index, cuts):
    _random_chunking(wire, index, cuts)


@pytest.mark.slow
@THOROUGH
@given(*MUTATION)
def test_mutated_streams_in_random_chunks_thoroughly(wire, index, start, length, junk, cuts):
    _mutated_and_chunked(wire, index, start, length, junk, cuts)
