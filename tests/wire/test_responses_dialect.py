"""The RESPONSES Dialect and the tool rules on its wire: readers of a Response and of a Codex
request (function, custom, namespace and hosted tools), the one path -> wire map, and the tools
checks a Codex answer meets (custom_tool_kept, namespace_kept, strict schemas, patch framing)."""

from __future__ import annotations

import json

import pytest
import responses_streams as rs

from conformance.capture.format import CapturedRequest
from conformance.checks import tools
from conformance.net.client import salted
from conformance.wire import RESPONSES
from conformance.wire.registry import DIALECTS, dialect, dialect_for_path, is_generation_path
from conformance.wire.responses import rules as responses_rules

PATCH_GRAMMAR = 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\nend_patch: "*** End Patch" LF?\n'
REQUEST = {
    "model": "m", "stream": True, "store": False, "tool_choice": "auto",
    "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
              {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}],
    "tools": [
        {"type": "function", "name": "exec_command", "strict": False,
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
                        "required": ["cmd"]}},
        {"type": "function", "name": "view_image", "strict": True,
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "detail": {"type": "string"}}}},
        {"type": "custom", "name": "apply_patch", "description": "patch files",
         "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}},
        {"type": "namespace", "name": "multi_agent_v1", "description": "agents",
         "tools": [{"type": "function", "name": "wait_agent",
                    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}]},
        {"type": "web_search", "external_web_access": False},
    ],
}


def _answer(*items) -> dict:
    return {"id": "resp_1", "status": "completed", "output": list(items), "usage": None}


def _ids(found) -> set[str]:
    return {v.check_id for v in found}


def test_the_path_map_is_one_function_for_every_caller():
    for path, wire in (("/v1/messages", "anthropic"), ("/anthropic/v1/messages/count_tokens?beta=true", "anthropic"),
                       ("/v1/chat/completions", "openai"), ("/v1/responses", "responses"),
                       ("/openai/v1/responses/", "responses"), ("/v1/models", None)):
        assert (dialect_for_path(path).name if dialect_for_path(path) else None) == wire, path
        assert CapturedRequest("POST", path.split("?")[0], "", {}).api == (wire or "other")
    assert is_generation_path("/v1/responses") and not is_generation_path("/v1/messages/count_tokens")
    assert set(DIALECTS) == {"anthropic", "openai", "responses"} and dialect("responses") is RESPONSES


def test_offered_tools_understand_function_custom_namespace_and_hosted():
    specs = {(t.namespace, t.name): t for t in RESPONSES.offered_tool_specs(REQUEST)}
    assert specs[(None, "exec_command")].kind == "function" and not specs[(None, "exec_command")].strict
    assert specs[(None, "view_image")].strict
    assert specs[(None, "apply_patch")].kind == "custom" and "Begin Patch" in specs[(None, "apply_patch")].grammar
    assert specs[("multi_agent_v1", "wait_agent")].kind == "function"
    assert specs[(None, "web_search")].kind == "hosted"
    assert set(RESPONSES.offered_tools(REQUEST)) == {"exec_command", "view_image", "apply_patch", "wait_agent",
                                                    "web_search"}


def test_request_readers():
    assert RESPONSES.chat_messages(REQUEST)[:2] == [{"role": "system", "content": "be brief"},
                                                    {"role": "user", "content": "fix it"}]
    assert RESPONSES.demanded_tool_choice({"tool_choice": "required"}) == ("force", None, None)
    assert RESPONSES.demanded_tool_choice({"tool_choice": {"type": "custom", "name": "apply_patch"}}) == (
        "force", "apply_patch", None)
    assert RESPONSES.demanded_tool_choice({"tool_choice": "none"}) == ("forbid", None, None)
    assert RESPONSES.output_cap({"max_output_tokens": 64}) == 64
    one = RESPONSES.one_turn_request("m", "sys", "hi", max_tokens=8, stream=True)
    assert one["instructions"] == "sys" and one["max_output_tokens"] == 8 and "messages" not in one
    bad, what = RESPONSES.invalid_request(one)
    assert bad["input"] == 12345 and bad["stream"] is False and "input" in what


def test_the_salt_goes_where_the_wire_keeps_the_system_prompt():
    with_dev = salted(REQUEST, RESPONSES, "tok")
    assert "messages" not in with_dev
    assert with_dev["input"][0]["content"][0]["text"].startswith("[conformance-run tok] ")
    with_instructions = salted({"model": "m", "instructions": "sys", "input": "hi"}, RESPONSES, "tok")
    assert with_instructions["instructions"].startswith("[conformance-run tok] sys")
    bare = salted({"model": "m", "input": "hi"}, RESPONSES, "tok")
    assert bare["input"][0]["role"] == "developer" and bare["input"][1]["content"] == "hi"


def test_stop_reasons_from_status_and_incomplete_details():
    assert RESPONSES.stop_reason(_answer(rs.message("hi"))) == "completed"
    assert RESPONSES.stop_reason(_answer(rs.function_call("exec_command", "{}"))) == "tool_call"
    cut = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    assert RESPONSES.cut_reason(cut) == "max_output_tokens" and RESPONSES.anthropic_stop(cut) == "max_tokens"
    assert "incomplete_details.reason" in RESPONSES.describe_cut("max_output_tokens")


def test_reasoning_and_text_readers():
    msg = _answer(rs.reasoning("Plan: look.", text="raw thought"), rs.message("Done."))
    assert RESPONSES.text(msg) == "Done."
    assert RESPONSES.thinking_blocks(msg) == [("Plan: look.raw thought", "gAAAAB-opaque-fixture-blob==")]


def _check(*items, request=REQUEST):
    found, notes = tools.check_arguments(_answer(*items), request, RESPONSES)
    outcomes = tools.arguments_outcomes(_answer(*items), request, RESPONSES) + tools.kept_outcomes(
        _answer(*items), request, RESPONSES)
    return found, {o.check_id: o.outcome for o in outcomes}


def test_a_freeform_patch_call_passes_and_its_function_form_fails_custom_tool_kept():
    found, verdict = _check(rs.custom_call("apply_patch", rs.PATCH))
    assert found == [] and verdict[tools.CUSTOM_TOOL_KEPT] == "passed"
    found, verdict = _check(rs.function_call("apply_patch", json.dumps({"input": rs.PATCH})))
    assert verdict[tools.CUSTOM_TOOL_KEPT] == "failed"
    assert verdict[tools.NAME_OFFERED] == "passed" and verdict[tools.ARGUMENTS_SCHEMA] != "failed"


def test_a_patch_without_its_framing_fails_the_schema_rule():
    found, _ = _check(rs.custom_call("apply_patch", "--- a/x\n+++ b/x\n"))
    assert _ids(found) == {tools.ARGUMENTS_SCHEMA}


def test_a_patch_written_as_text_is_a_dropped_call():
    found = tools.check_call_structured(_answer(rs.message("Here:\n" + rs.PATCH)), REQUEST, RESPONSES)
    assert _ids(found) == {tools.CALL_STRUCTURED}
    assert tools.check_call_structured(_answer(rs.message("All done.")), REQUEST, RESPONSES) == []


@pytest.mark.parametrize("name, namespace, ok", [
    ("wait_agent", "multi_agent_v1", True), ("multi_agent_v1__wait_agent", None, False),
    ("multi_agent_v1.wait_agent", None, False), ("wait_agent", None, False), ("wait_agent", "other", False)])
def test_namespace_kept(name, namespace, ok):
    found, verdict = _check(rs.function_call(name, json.dumps({"id": "a1"}), namespace=namespace))
    assert verdict[tools.NAMESPACE_KEPT] == ("passed" if ok else "failed")
    assert verdict[tools.NAME_OFFERED] == "passed", "a flattened name is not also an unoffered tool"
    assert tools.ARGUMENTS_SCHEMA not in _ids(found)


def test_strict_schemas_are_held_exactly():
    found, _ = _check(rs.function_call("view_image", json.dumps({"path": "a.png", "detail": "low"})))
    assert found == []
    found, _ = _check(rs.function_call("view_image", json.dumps({"path": "a.png"})))
    assert _ids(found) == {tools.ARGUMENTS_SCHEMA}, "strict: every property is required"
    found, _ = _check(rs.function_call("view_image", json.dumps({"path": "a", "detail": "x", "zoom": 2})))
    assert _ids(found) == {tools.ARGUMENTS_SCHEMA}, "strict: no property beyond the schema's"
    found, _ = _check(rs.function_call("exec_command", json.dumps({"cmd": "ls", "extra": 1})))
    assert found == [], "not strict: extra properties are the schema's business"


def test_unoffered_and_malformed_calls():
    found, _ = _check(rs.function_call("rm_everything", "{}"))
    assert _ids(found) == {tools.NAME_OFFERED}
    found, _ = _check(rs.function_call("exec_command", '{"cmd": '))
    assert _ids(found) == {tools.ARGUMENTS_SCHEMA}


def test_cut_vocabulary_is_the_wire_modules_own():
    assert RESPONSES.stops.cut == responses_rules.CUT_REASONS and RESPONSES.stops.caps <= RESPONSES.stops.cut
