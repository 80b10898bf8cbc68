"""`conformance check-stream` judges every tool call's argument JSON on every wire, with or
without `--request`: a call whose closing brace was lost fails with `tools.arguments_schema`
(the Responses stream grammar has no argument rule of its own, so this is what catches it there)."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main

BROKEN = '{"path": "a.txt"'  # the closing brace lost
WHOLE = '{"path": "a.txt"}'


def _sse(events: list[tuple[str | None, dict]]) -> bytes:
    return b"".join((f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
                    for name, data in events)


def _anthropic(arguments: str) -> bytes:
    usage = {"input_tokens": 1, "output_tokens": 1}
    return _sse([
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": arguments}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"})])


def _chat(arguments: str) -> bytes:
    def chunk(delta: dict, finish: str | None = None) -> tuple[None, dict]:
        return None, {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return _sse([
        chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                    "function": {"name": "read", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
        chunk({}, "tool_calls")]) + b"data: [DONE]\n\n"


def _responses(arguments: str) -> bytes:
    item = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "read",
            "arguments": arguments}
    response = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "error": None,
                "incomplete_details": None, "tools": [], "tool_choice": "auto", "parallel_tool_calls": True}
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
    events = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": [], "usage": None}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress",
                                                                           "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": arguments},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0,
         "arguments": arguments},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {**response, "status": "completed", "output": [item],
                                                    "usage": usage}}]
    return _sse([(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)])


STREAMS = {"anthropic": _anthropic, "openai": _chat, "responses": _responses}
REQUESTS = {
    "anthropic": {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}],
                  "tools": [{"name": "read", "input_schema": {"type": "object"}}]},
    "openai": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
               "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]},
    "responses": {"model": "m", "input": "hi", "stream": True,
                  "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}]},
}


@pytest.mark.parametrize("with_request", [False, True], ids=["alone", "with-request"])
@pytest.mark.parametrize("protocol", list(STREAMS))
def test_argument_json_is_judged_on_every_wire(tmp_path, capsys, protocol, with_request):
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUESTS[protocol]))
    extra = ["--request", str(request)] if with_request else []
    whole, broken = tmp_path / "whole.sse", tmp_path / "broken.sse"
    whole.write_bytes(STREAMS[protocol](WHOLE))
    broken.write_bytes(STREAMS[protocol](BROKEN))
    assert main(["check-stream", str(whole), "--protocol", protocol, "--json", *extra]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["check-stream", str(broken), "--protocol", protocol, "--json", *extra]) == 1
    verdict = json.loads(capsys.readouterr().out)
    found = [v for v in verdict["violations"] if v["check_id"] == "tools.arguments_schema"]
    assert len(found) == 1 and "do not parse" in found[0]["message"], verdict["violations"]
