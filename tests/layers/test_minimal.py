"""The minimal Anthropic -> OpenAI-chat translation attribution replays when the engine has no
route for the client's wire: the documented shape, read through the source wire's Dialect."""

from __future__ import annotations

import dataclasses

from conformance.layers.hop import probe_requests
from conformance.layers.minimal import SOURCE, TARGET, minimal_openai_request, translates
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

CLIENT = probe_requests("m")["turn2"]


def test_minimal_translation_is_documented_shape():
    out = minimal_openai_request(CLIENT)
    roles = [m["role"] for m in out["messages"]]
    assert roles[0] == "system" and "tool" in roles
    assert out["stop"] == CLIENT["stop_sequences"] and out["stream_options"] == {"include_usage": True}


def test_each_block_becomes_its_chat_form_and_nothing_else_is_carried():
    out = minimal_openai_request(CLIENT)
    system, user, mid_system, assistant, tool = out["messages"]
    assert system["content"].startswith("You are a coding agent") and "\n" in system["content"]
    assert user == {"role": "user", "content": CLIENT["messages"][0]["content"][0]["text"]}
    assert mid_system == {"role": "system", "content": CLIENT["messages"][1]["content"]}
    assert assistant["content"] == "Reading the token file." and assistant["tool_calls"][0]["function"] == {
        "name": "Read", "arguments": '{"file_path": "/tmp/conformance-probe/token.txt"}'}
    assert tool == {"role": "tool", "tool_call_id": "toolu_01ProbeRead0000000000001", "content": "     1\u2192c0ffee15badd"}
    assert set(out) == {"model", "messages", "max_tokens", "stop", "tools", "stream", "stream_options"}
    assert out["tools"][0]["function"]["parameters"] == CLIENT["tools"][0]["input_schema"]


def test_an_invalid_request_stays_invalid():
    bad = {"model": "m", "max_tokens": 5, "messages": "this is not a list of messages", "stream": False, "tools": []}
    assert minimal_openai_request(bad) == {"model": "m", "max_tokens": 5, "messages": "this is not a list of messages",
                                           "stream": False}


def test_it_takes_the_requests_of_a_wire_routers_translate():
    assert (SOURCE, TARGET) == (ANTHROPIC, CHAT)
    assert translates(ANTHROPIC) and not translates(CHAT) and not translates(RESPONSES)
    assert translates(dataclasses.replace(CHAT, name="toy", router_translates=True))  # a property, not a name
