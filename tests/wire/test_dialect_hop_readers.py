"""The Dialect readers a router hop is built with (conformance.layers.hop, checks.translation):
the last user text and the tail of a conversation, a raw tool's schema, and the wire properties
that choose the translation rules. Each on the three wires."""

from __future__ import annotations

from conformance.wire import ANTHROPIC, CHAT, RESPONSES

ANTHROPIC_LOOP = {"system": "sys", "messages": [
    {"role": "user", "content": [{"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                                 {"type": "text", "text": "read token.txt"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": [{"type": "text", "text": "c0ffee"}, {"type": "text", "text": "15badd"}]}]},
]}
CHAT_LOOP = {"messages": [
    {"role": "system", "content": "sys"}, {"role": "user", "content": "read token.txt"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "function": {"name": "Read", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "t1", "content": "  c0ffee  "},
]}
RESPONSES_LOOP = {"instructions": "sys", "input": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read token.txt"}]},
    {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": {"stdout": "c0ffee"}},
]}


def test_the_last_user_text_is_the_users_words_never_a_tool_result():
    assert ANTHROPIC.last_user_text(ANTHROPIC_LOOP) == "read token.txt"
    assert CHAT.last_user_text(CHAT_LOOP) == "read token.txt"
    assert RESPONSES.last_user_text(RESPONSES_LOOP) == "read token.txt"
    assert RESPONSES.last_user_text({"input": "hello"}) == "hello"
    assert ANTHROPIC.last_user_text({"messages": [{"role": "user", "content": "  "}]}) == ""
    assert CHAT.last_user_text(None) == ""


def test_the_tail_is_the_longest_text_of_the_last_entry():
    assert ANTHROPIC.tail_text(ANTHROPIC_LOOP) == "c0ffee 15badd"  # a tool_result's text blocks, joined by spaces
    assert CHAT.tail_text(CHAT_LOOP) == "c0ffee"
    assert RESPONSES.tail_text(RESPONSES_LOOP) == '{"stdout": "c0ffee"}'  # an output that is not text, as JSON
    assert RESPONSES.tail_text({"input": " hi "}) == "hi"
    assert ANTHROPIC.tail_text({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "longer"}]}]}) == "longer"
    assert ANTHROPIC.tail_text({"system": "only a system prompt"}) == ""
    assert CHAT.tail_text({"messages": [{"role": "assistant", "content": None}]}) == ""


def test_a_raw_tools_schema_as_each_wire_writes_it():
    schema = {"type": "object", "properties": {"p": {"type": "string"}}}
    assert ANTHROPIC.tool_schema({"name": "Read", "input_schema": schema}) == schema
    assert ANTHROPIC.tool_schema({"type": "function", "function": {"name": "Read", "parameters": schema}}) == schema
    assert CHAT.tool_schema({"type": "function", "function": {"name": "Read", "parameters": schema}}) == schema
    assert RESPONSES.tool_schema({"type": "function", "name": "Read", "parameters": schema}) == schema
    assert RESPONSES.tool_schema({"type": "web_search"}) is None and CHAT.tool_schema("junk") is None


def test_the_properties_that_choose_the_translation_rules():
    assert ANTHROPIC.router_translates and not CHAT.router_translates and not RESPONSES.router_translates
    assert RESPONSES.carries_items and not ANTHROPIC.carries_items
    assert CHAT.stream_usage_option == "stream_options"
    assert ANTHROPIC.stream_usage_option is None and RESPONSES.stream_usage_option is None


def test_responses_turns_read_custom_tool_calls_and_their_outputs():
    """The one difference from the reader checks/translation.py had before the Dialect: custom
    (freeform) tool calls and their outputs are calls and results (it skipped them, so a Codex
    `apply_patch` turn read as no call at all)."""
    body = {"input": [
        {"type": "message", "role": "user", "content": "patch it"},
        {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "p1", "output": "Done"},
    ]}
    user, assistant, tool = RESPONSES.turns(body)
    assert assistant.calls == [("p1", "apply_patch", "*** Begin Patch")] and tool.results == [("p1", "Done")]
    assert not RESPONSES.is_first_request(body)
