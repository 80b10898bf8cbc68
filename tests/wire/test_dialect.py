"""The Dialect of each wire agrees with its wire module, and its readers read both shapes."""

from __future__ import annotations

import pytest

from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from conformance.wire.anthropic import rules as anthropic
from conformance.wire.chat import rules as openai
from conformance.wire.registry import DIALECTS, dialect


def test_cut_vocabulary_is_the_wire_modules_own():
    assert ANTHROPIC.stops.cut == frozenset(anthropic.CUT_STOP_REASONS)
    assert CHAT.stops.cut == openai.CUT_FINISH_REASONS
    for d in DIALECTS.values():
        assert d.stops.caps <= d.stops.cut
        assert set(d.stops.to_anthropic.values()) <= set(anthropic.STOP_REASONS)


def test_unknown_api_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="'anthropic', 'openai'"):
        dialect("gemini")


def test_content_predicate_is_the_wire_modules():
    assert ANTHROPIC.content_started(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert not ANTHROPIC.content_started(b'event: ping\ndata: {"type":"ping"}\n\n')
    assert CHAT.content_started(b"data: [DONE]\n\n")


def test_tool_calls_on_both_wires():
    a = {"content": [{"type": "text", "text": "hi"},
                     {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "x"}}],
         "stop_reason": "tool_use"}
    [call] = ANTHROPIC.tool_calls(a)
    assert (call.id, call.name, call.arguments, call.pointer) == ("t1", "Write", {"file_path": "x"}, "/content/1/input")
    [cut] = ANTHROPIC.tool_calls(a, {"/content/1/input": '{"file_'})
    assert cut.arguments is None and cut.parse_error.startswith("not JSON")
    o = {"content": None, "finish_reason": "tool_calls",
         "tool_calls": [{"id": "c1", "function": {"name": "read", "arguments": '{"path": "a"}'}},
                        {"id": "c2", "function": {"name": "read", "arguments": {"path": "b"}}},
                        {"id": "c3", "function": {"name": "read", "arguments": "[1]"}}]}
    calls = CHAT.tool_calls(o)
    assert [c.arguments for c in calls] == [{"path": "a"}, {"path": "b"}, None]
    assert calls[1].not_text == "dict" and calls[0].not_text is None
    assert "not an object" in calls[2].parse_error
    assert CHAT.anthropic_stop(o) == "tool_use" and ANTHROPIC.anthropic_stop(a) == "tool_use"


def test_tool_definition_is_each_wires_shape():
    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    assert ANTHROPIC.tool_definition("Bash", "Run a command", schema) == {
        "name": "Bash", "description": "Run a command", "input_schema": schema}
    assert CHAT.tool_definition("bash", "Run a command", schema) == {
        "type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": schema}}
    assert RESPONSES.tool_definition("exec_command", "Run a command", schema) == {
        "type": "function", "name": "exec_command", "description": "Run a command", "parameters": schema}
    for d in DIALECTS.values():  # what the wire writes, its own reader reads back
        request = d.with_tools(d.one_turn_request("m", "s", "u", max_tokens=8, stream=False),
                               [d.tool_definition("probe_tool", "d", schema)])
        assert d.offered_tools(request) == {"probe_tool": schema}


def test_reasoning_variants_are_the_clients_fields_on_each_wire():
    anthropic_variants = ANTHROPIC.reasoning_variants(1024)
    assert [name for name, _ in anthropic_variants] == [
        "adaptive+effort=low", "adaptive+effort=medium", "adaptive+effort=high", "adaptive+effort=xhigh",
        "adaptive+effort=max", "enabled+budget=1024"]
    assert anthropic_variants[0][1] == {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}
    assert ANTHROPIC.thinking_budget(anthropic_variants[-1][1]) == 1024, "the budget variant reads back"
    assert CHAT.reasoning_variants(1024) == [(f"reasoning_effort={e}", {"reasoning_effort": e})
                                             for e in ("low", "medium", "high")]
    assert RESPONSES.reasoning_variants(1024)[2] == ("reasoning.effort=high", {"reasoning": {"effort": "high"}})
    assert all(d.thinking_budget(fields) is None for d in (CHAT, RESPONSES) for _, fields in d.reasoning_variants(1))


def test_tool_choice_words_are_the_openai_wires_and_objects_each_wires_own():
    for wire in (CHAT, RESPONSES):
        assert wire.demanded_tool_choice({"tool_choice": "required"}) == ("force", None, None)
        assert wire.demanded_tool_choice({"tool_choice": "none"}) == ("forbid", None, None)
        assert wire.demanded_tool_choice({"tool_choice": "auto"}) is None
    assert CHAT.demanded_tool_choice({"tool_choice": {"type": "function", "function": {"name": "Read"}}}) == (
        "force", "Read", None)
    assert RESPONSES.demanded_tool_choice({"tool_choice": {"type": "function", "name": "Read"}}) == (
        "force", "Read", None)
    assert ANTHROPIC.demanded_tool_choice({"tool_choice": {"type": "tool", "name": "Read"}}) == ("force", "Read", None)
    assert ANTHROPIC.demanded_tool_choice({"tool_choice": "required"}) is None  # no words on this wire
    assert ANTHROPIC.demanded_tool_choice({"tool_choice": {"type": "none"}}) == ("forbid", None, None)
