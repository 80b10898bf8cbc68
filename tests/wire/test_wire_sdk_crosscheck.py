"""For valid streams, the official SDKs accumulate the same final message as ours.

The SDKs are lenient (docs/wire-facts.md: the anthropic SDK accepts a missing stop_sequence, trailing
partial_json garbage, a thinking_delta in a text block), so they are an oracle for valid
streams only. Entry points, read from the installed packages:
- anthropic 2.14: `anthropic.lib.streaming._messages.accumulate_event(event=, current_snapshot=,
  json_bufs=)` — what `MessageStream` runs on every parsed event; the bytes go through the SDK's
  own SSE decoder (`anthropic._streaming.SSEDecoder.iter_bytes`), not ours.
- openai: `openai.lib.streaming.chat.ChatCompletionStreamState.handle_chunk` and
  `get_final_completion()` (the documented helper for accumulating chunks by hand).
"""

from __future__ import annotations

import json

import make_stream_fixtures as mk
import openai
import pytest
from anthropic._streaming import SSEDecoder  # any WHATWG decoder: the openai SDK's is the same code
from anthropic.lib.streaming._messages import accumulate_event
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from wire_helpers import body, fixture_id, fixtures, request

from conformance.wire.anthropic import grammar as ours_anthropic
from conformance.wire.chat import grammar as ours_openai


def sdk_anthropic_message(raw: bytes) -> dict:
    snapshot, bufs = None, {}
    for sse in SSEDecoder().iter_bytes(iter([raw])):
        # MessageStream accumulates exactly these event names (anthropic/_streaming.py)
        if sse.event in ("message_start", "message_delta", "message_stop", "content_block_start",
                         "content_block_delta", "content_block_stop"):
            snapshot = accumulate_event(event=json.loads(sse.data), current_snapshot=snapshot, json_bufs=bufs)
    return snapshot.to_dict()


COMPARED = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")


# A leading BOM is legal per WHATWG, but the SDK's decoder keeps it (see the test below).
SDK_ANTHROPIC_CASES = [f for f in fixtures(valid=True, protocol="anthropic", kind="stream")
                       if "sse.stream.bom" not in f["warnings"]]


@pytest.mark.parametrize("f", SDK_ANTHROPIC_CASES, ids=fixture_id)
def test_anthropic_sdk_accumulates_the_same_message(f):
    raw = body(f)
    report = ours_anthropic.check_stream(raw)
    ours = report.message
    theirs = sdk_anthropic_message(raw)
    for ptr, text in report.unparsed_tool_input.items():
        # A tool input cut by max_tokens: the SDK parses what arrived in jiter's partial mode (the
        # complete pairs); ours keeps `input: {}` and hands the text to the tools checks.
        block = theirs["content"][int(ptr.split("/")[2])]
        assert ours["stop_reason"] == "max_tokens" and isinstance(block["input"], dict)
        assert all(json.dumps(v) in text for v in block["input"].values())
        block["input"] = {}
    for key in COMPARED:
        assert ours[key] == theirs[key], key
    # the SDK keeps unknown message fields too; compare those it knows plus ours
    assert set(ours) - set(theirs) == set()


def sdk_openai_message(raw: bytes, req: dict | None) -> dict:
    state = ChatCompletionStreamState()
    for sse in SSEDecoder().iter_bytes(iter([raw])):
        if sse.data.startswith("[DONE]"):
            break
        data = json.loads(sse.data)
        if not data.get("choices") and not data.get("usage"):
            continue  # the SDK's Stream skips nothing, but an Azure filter chunk has no completion data
        state.handle_chunk(ChatCompletionChunk.construct(**data))
    try:
        done = state.get_final_completion().to_dict()
    except openai.LengthFinishReasonError as exc:  # what the SDK hands over for a turn cut by the cap
        done = exc.completion.to_dict()
    msg = done["choices"][0]["message"]
    return {
        "id": done["id"], "model": done["model"], "role": msg["role"], "content": msg.get("content"),
        "tool_calls": [{"id": c["id"], "type": c["type"], "function": {"name": c["function"]["name"],
                                                                       "arguments": c["function"]["arguments"]}}
                       for c in msg.get("tool_calls") or []],
        "finish_reason": done["choices"][0]["finish_reason"], "usage": done.get("usage"),
        "reasoning_content": msg.get("reasoning_content"),
    }


@pytest.mark.parametrize("f", fixtures(valid=True, protocol="openai", kind="stream"), ids=fixture_id)
def test_openai_sdk_accumulates_the_same_message(f):
    raw = body(f)
    ours = ours_openai.check_stream(raw, request=request(f)).message
    theirs = sdk_openai_message(raw, request(f))
    assert ours.get("reasoning_content") == theirs.pop("reasoning_content")
    for key, value in theirs.items():
        assert ours[key] == value, key


def test_the_sdk_is_lenient_where_we_are_not():
    """Why the SDK is only an oracle for valid streams: it accepts a missing stop_sequence."""
    evs = mk.a_text_stream()
    del evs[-2]["delta"]["stop_sequence"]
    raw = mk.sse(evs)
    assert sdk_anthropic_message(raw)["content"][0]["text"]  # no complaint from the SDK
    assert not ours_anthropic.check_stream(raw).ok


def test_the_sdk_loses_the_first_event_after_a_bom_which_is_why_we_warn():
    [sse] = list(SSEDecoder().iter_bytes(iter([b"\xef\xbb\xbfevent: message_start\ndata: {}\n\n"])))
    assert sse.event is None  # WHATWG strips the BOM; the SDK does not
    [bom] = [f for f in fixtures(valid=True) if "sse.stream.bom" in f["warnings"]]
    report = ours_anthropic.check_stream(body(bom))
    assert report.ok and [v.check_id for v in report.violations] == ["sse.stream.bom"]


def test_the_openai_sdk_concatenates_a_repeated_id_and_name_which_is_why_we_fail_it():
    items = mk.o_tool_stream()
    later = items[2]["choices"][0]["delta"]["tool_calls"][0]
    later["id"], later["function"]["name"] = "call_8f0a1b2c3d4e5f60", "read"
    raw = mk.o_sse(items)
    [call] = sdk_openai_message(raw, None)["tool_calls"]
    assert (call["id"], call["function"]["name"]) == ("call_8f0a1b2c3d4e5f60" * 2, "readread")
    assert {v.check_id for v in ours_openai.check_stream(raw, request=mk.REQ_AUTO).errors} == {
        "openai.stream.tool_call_once"}
