"""tools.choice_honoured: forced choices need a call, `none` forbids one, a cut turn with no text
is unverifiable. Messages are what the wire core accumulates; the llama.cpp answers are the ones
recorded from xllamacpp 2026.10.11549 (fixtures/peers/llamacpp-*.json)."""

from __future__ import annotations

import pytest

from conformance.checks.tool_choice import CHOICE_HONOURED, choice_outcome
from conformance.wire import ANTHROPIC, CHAT

A_TOOLS = [{"name": "Write", "input_schema": {"type": "object"}}, {"name": "Read", "input_schema": {"type": "object"}}]
O_TOOLS = [{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}},
           {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


def a_req(choice):
    return {"model": "m", "max_tokens": 160, "tools": A_TOOLS, "tool_choice": choice, "messages": []}


def o_req(choice):
    return {"model": "m", "max_tokens": 160, "tools": O_TOOLS, "tool_choice": choice, "messages": []}


A_TEXT = {"role": "assistant", "content": [{"type": "text", "text": "loremipsu mdolo rsita met"}], "stop_reason": "max_tokens"}
A_CALL = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Write", "input": {}}],
          "stop_reason": "tool_use"}
O_TEXT = {"role": "assistant", "content": "You can call functions. The available functions are listed inside <tools>",
          "finish_reason": "length"}
O_CALL = {"role": "assistant", "content": None, "finish_reason": "tool_calls",
          "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}


@pytest.mark.parametrize("wire,request_,message,outcome", [
    (ANTHROPIC, a_req({"type": "any"}), A_TEXT, "failed"),
    (ANTHROPIC, a_req({"type": "any"}), A_CALL, "passed"),
    (ANTHROPIC, a_req({"type": "tool", "name": "Read"}), A_CALL, "failed"),
    (ANTHROPIC, a_req({"type": "tool", "name": "Write"}), A_CALL, "passed"),
    (ANTHROPIC, a_req({"type": "none"}), A_CALL, "failed"),
    (ANTHROPIC, a_req({"type": "none"}), A_TEXT, "passed"),
    (CHAT, o_req("required"), O_TEXT, "failed"),
    (CHAT, o_req("required"), O_CALL, "passed"),
    (CHAT, o_req({"type": "function", "function": {"name": "write"}}), O_CALL, "failed"),
    (CHAT, o_req({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": "read"}}]}}), O_CALL, "passed"),
    (CHAT, o_req("none"), O_CALL, "failed"),
])
def test_verdicts(wire, request_, message, outcome):
    judged = choice_outcome(message, request_, wire, turn=1)
    assert judged.check_id == CHOICE_HONOURED and judged.outcome == outcome
    violations = judged.violations
    assert bool(violations) == (outcome == "failed")
    assert all(v.check_id == CHOICE_HONOURED and v.where.turn == 1 for v in violations)


def test_cut_before_any_text_is_unverifiable():
    cut = {"role": "assistant", "content": "", "reasoning_content": "thinking about it", "finish_reason": "length"}
    judged = choice_outcome(cut, o_req("required"), CHAT)
    assert (judged.outcome, judged.violations) == ("unverifiable", ())
    assert "length" in judged.note


@pytest.mark.parametrize("choice", [None, "auto", {"type": "auto"}, {"type": "function"}, 7])
def test_auto_and_unknown_shapes_demand_nothing(choice):
    assert CHAT.demanded_tool_choice(o_req(choice)) is None
    assert choice_outcome(O_TEXT, o_req(choice), CHAT) is None


def test_no_tools_offered_no_verdict():
    assert choice_outcome(O_TEXT, {"tool_choice": "required", "messages": []}, CHAT) is None


def test_failure_names_what_was_said_instead():
    violations = choice_outcome(O_TEXT, o_req("required"), CHAT).violations
    assert "You can call functions" in violations[0].seen
    assert "'length'" in violations[0].message
