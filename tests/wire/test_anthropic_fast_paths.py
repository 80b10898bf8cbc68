"""The Anthropic judge's fast paths give what its general path gives, on random valid and invalid
streams: the delta fast path of the state machine (`StreamMachine.fast`) and the SSE decoder's
(`SSEDecoder.fast`), each switched off against on."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.wire.anthropic.stream import StreamMachine
from conformance.wire.base import judge_stream
from conformance.wire.sse import SSEDecoder

INDICES = st.sampled_from([0, 1, 2, -1, True, False, 0.0, 1.5, "0", None, [0], "missing"])
TEXTS = st.sampled_from(["x", "", "caf\u00e9 ", '{"a": ', "1}", '"', 5, None, ["x"], {"t": 1}, "missing"])
DELTA_TYPES = st.sampled_from(["text_delta", "thinking_delta", "input_json_delta", "signature_delta",
                               "citations_delta", "vendor_delta", "", 7, None, ["text_delta"], "missing"])
FIELDS = st.sampled_from(["text", "thinking", "partial_json", "signature", "citation"])
BLOCK_TYPES = st.sampled_from(["text", "thinking", "tool_use", "server_tool_use", "mcp_tool_use",
                               "redacted_thinking", "web_search_tool_result", "vendor_block", ["text"], None])


def _with(obj: dict, key: str, value) -> dict:
    if value != "missing":
        obj[key] = value
    return obj


@st.composite
def deltas(draw, index, field: str):
    """A content_block_delta for the open block: well-formed, or with one or two of its parts
    changed (each change alone is what a fast path must notice)."""
    dtype = "input_json_delta" if field == "partial_json" else f"{field}_delta"
    delta = {"type": dtype, field: draw(st.sampled_from(["a", "b ", '{"k"']))}
    event = {"type": "content_block_delta", "index": index, "delta": delta}
    for change in draw(st.lists(st.sampled_from(["index", "delta type", "field", "text", "event type", "delta"]),
                                max_size=2)):
        if change == "index":
            event.pop("index", None)
            _with(event, "index", draw(INDICES))
        elif change == "delta type":
            delta.pop("type", None)
            _with(delta, "type", draw(DELTA_TYPES))
        elif change == "field":
            delta[draw(FIELDS)] = delta.pop(field, "x")
        elif change == "text":
            delta.pop(field, None)
            _with(delta, field, draw(TEXTS))
        elif change == "event type":
            event["type"] = draw(st.sampled_from(["ping", "content_block_stop", 3, None]))
        else:
            event.pop("delta", None)
            _with(event, "delta", draw(st.sampled_from(["text", None, [delta], "missing"])))
    return event


STREAMED = {"text": "text", "thinking": "thinking", "tool_use": "partial_json", "server_tool_use": "partial_json"}


@st.composite
def streams(draw) -> bytes:
    """An Anthropic stream: message_start, blocks of deltas, message_delta, message_stop, with
    events named or not, misnamed, missing, repeated, out of order, or not JSON."""
    events: list = [{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                          "model": "m", "content": [], "stop_reason": None,
                                                          "stop_sequence": None,
                                                          "usage": {"input_tokens": 1, "output_tokens": 1}}}]
    for pos in range(draw(st.integers(0, 3))):
        btype = draw(BLOCK_TYPES)
        block = {"type": btype, "text": ""} if btype == "text" else {"type": btype}
        if btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
            block.update(id="t", name="Read", input={})
        index = pos if draw(st.integers(0, 5)) else draw(INDICES)
        events.append(_with({"type": "content_block_start", "content_block": block}, "index", index))
        field = STREAMED.get(btype) if isinstance(btype, str) else None
        for _ in range(draw(st.integers(0, 6))):
            events.append(draw(deltas(index, field or draw(FIELDS))))
        if btype == "thinking" and draw(st.booleans()):
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "signature_delta", "signature": "s"}})
        if draw(st.integers(0, 5)):
            events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": draw(st.sampled_from(["end_turn", "tool_use",
                                                                                           "max_tokens"])),
                                                      "stop_sequence": None}, "usage": {"output_tokens": 3}})
    events.append({"type": "message_stop"})
    for _ in range(draw(st.integers(0, 3))):  # shuffle a little: swap, drop or repeat one event
        i = draw(st.integers(0, len(events) - 1))
        how = draw(st.sampled_from(["swap", "drop", "repeat", "not json"]))
        if how == "swap" and i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
        elif how == "drop":
            del events[i]
        elif how == "repeat":
            events.insert(i, events[i])
        else:
            events[i] = "{not json"
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        name = event.get("type") if isinstance(event, dict) else "content_block_delta"
        name = draw(st.sampled_from([name, name, name, name, "content_block_delta", "ping", None]))
        out.append((f"event: {name}\n" if isinstance(name, str) else "") + f"data: {data}\n\n")
    return "".join(out).encode()


def _judge(raw: bytes, cuts: list[int], *, fast_machine: bool, fast_sse: bool):
    decoder, machine = SSEDecoder(require_event_name=True), StreamMachine({"stream": True})
    decoder.fast, machine.fast = fast_sse, fast_machine
    bounds = [0, *sorted(c % (len(raw) + 1) for c in cuts), len(raw)]
    chunks = [(float(i), raw[a:b]) for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]
    report = judge_stream(decoder, machine, chunks)
    return (report.events, report.violations, report.message, report.complete, report.payloads,
            report.unparsed_tool_input)


@settings(max_examples=400, deadline=None)
@given(streams(), st.lists(st.integers(0, 10**6), max_size=6))
def test_the_fast_paths_give_what_the_general_path_gives(raw, cuts):
    general = _judge(raw, cuts, fast_machine=False, fast_sse=False)
    assert _judge(raw, cuts, fast_machine=True, fast_sse=True) == general
    assert _judge(raw, cuts, fast_machine=True, fast_sse=False) == general


def test_the_machine_fast_path_is_taken_on_a_well_formed_stream():
    """The comparison above would pass with a fast path that never ran: here it must take every delta."""
    events = [{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "m",
                                                    "content": [], "stop_reason": None, "stop_sequence": None,
                                                    "usage": {"input_tokens": 1, "output_tokens": 1}}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
                for w in ("a", "b")),
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
               "usage": {"output_tokens": 2}},
              {"type": "message_stop"}]
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    machine = StreamMachine()

    def general_path(data, ev):
        raise AssertionError(f"event #{ev.index} went through the general path")

    machine._handlers["content_block_delta"] = general_path
    report = judge_stream(SSEDecoder(require_event_name=True), machine, raw)
    assert report.ok and report.message["content"] == [{"type": "text", "text": "ab"}]
