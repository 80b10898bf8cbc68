"""The writers the suite derives requests with (suite/test_client_wire.py, test_replay.py,
test_protocol.py): each returns a changed copy that stays valid on its wire, and reads agree
with writes (what `without_system_entries` removes is what `system_role_turns` reads)."""

from __future__ import annotations

import copy

import pytest

from conformance.wire import ANTHROPIC, CHAT, RESPONSES

BILLING = "x-anthropic-billing-header:"


def _claude_code_loop() -> dict:
    """The shape of a Claude Code tool-loop turn: billing block, thinking budget, a system entry,
    a deferred tool, a tool_use answered by a tool_result."""
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 32000,
        "thinking": {"type": "enabled", "budget_tokens": 31999, "display": "omitted"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "system": [{"type": "text", "text": f"{BILLING} cc_version=2.1.332.a1b"},
                   {"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Read", "description": "read a file", "input_schema": {"type": "object"}},
                  {"name": "ToolSearch", "description": "search tools", "input_schema": {"type": "object"}},
                  {"name": "NotebookEdit", "defer_loading": True, "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                                         {"type": "text", "text": "say hi"}]},
            {"role": "system", "content": []},
            {"role": "assistant", "content": [{"type": "text", "text": "reading"},
                                              {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                               "input": {"file_path": "a.txt"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"}]},
            {"role": "system", "content": [{"type": "text", "text": "a reminder"}]},
        ],
        "stream": True,
    }


CODEX = {
    "model": "gpt-5",
    "instructions": "You are Codex.",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "permissions"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "abc"},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ],
    "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
    "stream": True,
}


def test_an_output_cap_under_the_thinking_budget_lowers_the_budget():
    body = _claude_code_loop()
    capped = ANTHROPIC.with_output_cap(body, 4096)
    assert capped["max_tokens"] == 4096
    assert ANTHROPIC.thinking_budget(capped) == 4095, "budget_tokens must stay below max_tokens"
    assert capped["thinking"]["display"] == "omitted", "only the budget changes"
    off = ANTHROPIC.with_output_cap(body, 1024)
    assert off["thinking"] == {"type": "disabled"} and "context_management" not in off, \
        "no room for the 1024-token minimum budget: thinking off"
    assert body == _claude_code_loop(), "writers never change their input"


def test_system_role_turns_are_what_without_system_entries_removes():
    body = _claude_code_loop()
    turns = ANTHROPIC.system_role_turns(body)
    assert [(t.index, t.texts) for t in turns] == [(1, []), (4, ["a reminder"])]
    kept = ANTHROPIC.without_system_entries(body)
    assert [m["role"] for m in kept["messages"]] == ["user", "assistant", "user"]
    assert ANTHROPIC.system_role_turns(kept) == []
    chat = {"messages": [{"role": "system", "content": "the system prompt"}, {"role": "user", "content": "hi"}]}
    assert CHAT.system_role_turns(chat) == [] and CHAT.without_system_entries(chat) == chat, \
        "a chat wire's leading system message is its system prompt"
    assert RESPONSES.system_role_turns(CODEX) == [] and RESPONSES.without_system_entries(CODEX) == CODEX, \
        "a Responses developer message is an instruction of that wire, not a system entry"


def test_tool_definitions_names_and_deferred_tools():
    body = _claude_code_loop()
    assert [ANTHROPIC.tool_name(t) for t in ANTHROPIC.tool_definitions(body)] == ["Read", "ToolSearch", "NotebookEdit"]
    assert ANTHROPIC.deferred_tools(body) == ["NotebookEdit"]
    assert [CHAT.tool_name(t) for t in CHAT.tool_definitions(
        {"tools": [{"type": "function", "function": {"name": "read"}}, "junk"]})] == ["read"]
    assert RESPONSES.tool_definitions({"tools": "not a list"}) == []


def test_thinking_display_is_read_and_removed():
    body = _claude_code_loop()
    assert ANTHROPIC.thinking_display(body) == "omitted"
    plain = ANTHROPIC.without_thinking_display(body)
    assert ANTHROPIC.thinking_display(plain) is None and plain["thinking"]["budget_tokens"] == 31999
    assert CHAT.thinking_display({"messages": []}) is None


def test_stream_and_stop_sequence_writers():
    chat = {"messages": [], "stream": True, "stream_options": {"include_usage": True}}
    whole = CHAT.with_stream(chat, False)
    assert whole == {"messages": [], "stream": False}, "stream_options is valid only on a streamed request"
    assert ANTHROPIC.with_stream({"stream": False}, True) == {"stream": True}
    assert ANTHROPIC.with_stop_sequences({"stream": True}, ["word"])["stop_sequences"] == ["word"]
    assert CHAT.with_stop_sequences({}, ["word"]) == {"stop": ["word"]}
    with pytest.raises(ValueError):
        RESPONSES.with_stop_sequences(CODEX, ["word"])


def test_tool_result_writers_change_the_last_tool_result():
    body = _claude_code_loop()
    assert ANTHROPIC.last_tool_result(body) == "toolu_1"
    image = ANTHROPIC.with_tool_result_image(body, "image/png", "AAAA")
    assert image["messages"][3]["content"][0]["content"] == [
        {"type": "text", "text": "hello"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]
    blocks = [{"type": "redacted_thinking", "data": "eA=="}]
    replayed = ANTHROPIC.with_replayed_blocks(body, blocks)
    assert [b["type"] for b in replayed["messages"][2]["content"]] == ["redacted_thinking", "text", "tool_use"]
    ref = ANTHROPIC.with_tool_reference(body, "NotebookEdit", search="ToolSearch")
    assert ref["messages"][2]["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch",
                                              "input": {"query": "select:NotebookEdit"}}]
    assert ref["messages"][3]["content"][0]["content"] == [{"type": "tool_reference", "tool_name": "NotebookEdit"}]
    unsearched = ANTHROPIC.with_tool_reference(body, "NotebookEdit")
    assert unsearched["messages"][2]["content"][0]["name"] == "Read", "without a search tool the call keeps its name"
    assert body == _claude_code_loop()


def test_tool_result_writers_refuse_a_request_without_one():
    first = {"messages": [{"role": "user", "content": "hi"}]}
    assert ANTHROPIC.last_tool_result(first) is None
    with pytest.raises(LookupError):
        ANTHROPIC.with_tool_result_image(first, "image/png", "AAAA")
    assert CHAT.last_tool_result({"messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]}) is None
    with pytest.raises(LookupError):
        RESPONSES.with_tool_reference(CODEX, "shell")


def test_billing_block_and_a_shared_system_prompt():
    first, second = _claude_code_loop(), _claude_code_loop()
    second["system"] = [{"type": "text", "text": f"{BILLING} cc_version=2.1.332.ffe"},
                        {"type": "text", "text": "You are Claude Code in /other/project."}]
    assert ANTHROPIC.system_block_text(first, BILLING) == f"{BILLING} cc_version=2.1.332.a1b"
    shared = ANTHROPIC.with_system_of(second, first, keep=BILLING)
    assert shared["system"] == [second["system"][0], first["system"][1]], \
        "its own billing header, then the first conversation's system text"
    assert ANTHROPIC.system_block_text({"system": "a string"}, BILLING) is None
    assert CHAT.with_system_of({"messages": []}, {"messages": []}, keep=BILLING) == {"messages": []}


def test_salted_prefix_skips_the_billing_block_and_salts_the_first_tool():
    salted = ANTHROPIC.salted_prefix(_claude_code_loop(), "[salt] ", skip=BILLING)
    assert salted["system"][0]["text"].startswith(BILLING) and salted["system"][1]["text"] == "[salt] You are Claude Code."
    assert salted["tools"][0]["description"] == "[salt] read a file"


def test_the_parallel_prompt_goes_into_a_responses_request():
    """The first-turn prompt writer puts the prompt in on every wire; the old `messages`-only
    writer left a Responses request saying "say hi"."""
    asked = RESPONSES.with_prompt(CODEX, "read two files", first_turn=True)
    assert RESPONSES.prompt(asked) == "read two files"
    assert [i.get("role") for i in asked["input"]] == ["developer", "user", "user"], \
        "the conversation ends after the prompt's entry"
    assert asked["input"][1] == CODEX["input"][1], "the client's context block stays"
    body = _claude_code_loop()
    cc = ANTHROPIC.with_prompt(body, "read two files", first_turn=True)
    assert cc["messages"] == [{"role": "user", "content": [body["messages"][0]["content"][0],
                                                           {"type": "text", "text": "read two files"}]}]


def test_forcing_then_thinking_off_leaves_no_thinking():
    forced = ANTHROPIC.without_thinking(ANTHROPIC.forcing(_claude_code_loop(), "Read"))
    assert forced["tool_choice"] == {"type": "tool", "name": "Read"}
    assert "thinking" not in forced and "context_management" not in forced
    assert copy.deepcopy(CODEX) == CODEX and RESPONSES.forcing(CODEX)["tool_choice"] == "required"
