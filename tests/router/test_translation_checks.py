"""translation.* checks on hops shaped like what real routers send (facts from LiteLLM's and
claude-code-router's Anthropic adapters, cited in conformance/router/translate.py), and the
attribution decision table."""

from __future__ import annotations

import json

from conformance.checks import translation as translation_checks
from conformance.core.registry import registered as load_all
from conformance.core.registry import violation
from conformance.layers.attribution import decide, symptom
from conformance.layers.hop import diff, probe_requests
from conformance.layers.minimal import minimal_openai_request

CLIENT = probe_requests("m")["turn2"]


def _ids(report, severity="error"):
    return sorted({v.check_id for v in report.violations if v.severity == severity})


def _faithful_engine_request(**changes):
    """What a faithful translating router sends for CLIENT (the reference router's mapping)."""
    from conformance.router.translate import anthropic_to_openai

    body, _ = anthropic_to_openai(CLIENT, model="m")
    body.update(changes)
    return body


def test_faithful_translation_has_no_errors_and_lists_what_it_lost():
    report = diff(translation_checks.Hop(CLIENT, _faithful_engine_request(), "openai"))
    assert _ids(report) == []
    assert "output_config.effort xhigh -> reasoning_effort high" in " ".join(report.mappings)
    lost = " ".join(report.lost)
    assert "signatures" in lost and "cache_control" in lost


def test_litellm_shape_drops_the_mid_conversation_system_entry_and_passes_effort_verbatim():
    engine = _faithful_engine_request(reasoning_effort="xhigh")
    # LiteLLM translates only user/assistant roles: Claude Code's role: system entry vanishes.
    engine["messages"] = [m for m in engine["messages"] if not (m["role"] == "system" and "Mid-conversation" in str(m["content"]))]
    report = diff(translation_checks.Hop(CLIENT, engine, "openai"))
    assert translation_checks.MESSAGES in _ids(report)
    assert "thinking adaptive + output_config.effort xhigh -> reasoning_effort xhigh" in report.mappings


def test_claude_code_router_shape_stringifies_list_tool_results_and_drops_thinking():
    engine = _faithful_engine_request()
    for m in engine["messages"]:
        m.pop("reasoning_content", None)
        if m["role"] == "tool":
            m["content"] = json.dumps([{"type": "text", "text": "     1\u2192c0ffee15badd"}], ensure_ascii=False)
    report = diff(translation_checks.Hop(CLIENT, engine, "openai"))
    # the result's text is still inside the JSON string (a warning); thinking history loss is by construction (info)
    assert translation_checks.PAIRING not in _ids(report) and translation_checks.PAIRING in _ids(report, "warning")
    assert any("assistant thinking sent back" in v.message for v in report.by_check[translation_checks.THINKING])


def test_rewritten_tool_result_id_breaks_pairing():
    engine = _faithful_engine_request()
    for m in engine["messages"]:
        if m["role"] == "tool":
            m["tool_call_id"] = "call_0"
    report = diff(translation_checks.Hop(CLIENT, engine, "openai"))
    assert {translation_checks.PAIRING, translation_checks.TOOL_IDS} <= set(_ids(report))


def test_schema_change_and_dropped_stop_sequences_are_errors():
    engine = _faithful_engine_request()
    engine.pop("stop")
    engine["tools"][0]["function"]["parameters"] = {"type": "object", "properties": {"path": {"type": "string"}}}
    report = diff(translation_checks.Hop(CLIENT, engine, "openai"))
    assert {translation_checks.TOOLS, translation_checks.STOPS} <= set(_ids(report))
    schema_v = next(v for v in report.by_check[translation_checks.TOOLS] if v.is_error)
    assert schema_v.where.pointer.startswith("/tools/0/input_schema")


def test_response_side_stop_reason_usage_and_thinking():
    engine_msg = {"content": None, "reasoning_content": "I will read.", "finish_reason": "tool_calls",
                  "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}],
                  "usage": {"prompt_tokens": 100, "completion_tokens": 20}}
    client_msg = {"content": [{"type": "tool_use", "id": "call_1", "name": "Read", "input": {}}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 0, "output_tokens": 0}}
    report = diff(translation_checks.Hop(CLIENT, _faithful_engine_request(), "openai", engine_msg, client_msg))
    assert {translation_checks.STOP_REASON, translation_checks.USAGE, translation_checks.THINKING} <= set(_ids(report))


def test_anthropic_pass_through_must_keep_signatures_and_cache_control():
    engine = json.loads(json.dumps(CLIENT))
    engine["system"][1].pop("cache_control")
    engine["messages"][2]["content"][0]["signature"] = "altered"
    report = diff(translation_checks.Hop(CLIENT, engine, "anthropic"))
    assert {translation_checks.CACHE, translation_checks.THINKING} <= set(_ids(report))


def test_injection_probe_with_tools_fails_only_when_opted_in():
    body = probe_requests("m", injection=True)["injection"]
    engine = minimal_openai_request(body)
    assert translation_checks.INJECTION in _ids(diff(translation_checks.Hop(body, engine, "openai", injection_probe=True)))
    assert translation_checks.INJECTION not in _ids(diff(translation_checks.Hop(body, engine, "openai", injection_probe=False)))
    engine.pop("tools")
    assert translation_checks.INJECTION not in _ids(diff(translation_checks.Hop(body, engine, "openai", injection_probe=True)))


def _v(check_id):
    load_all()  # the wire rules register on import
    return violation(check_id, "x")


def test_decide_layers():
    assert decide([_v("identity.model_matches")], [], engine_answered=True)[0] == "router"
    assert decide([_v("anthropic.stream.tool_use_stop_reason")], [_v("openai.stream.finish_reason_tool_calls")],
                  engine_answered=True)[0] == "engine"
    assert decide([_v("tools.call_structured"), _v("identity.model_matches")], [_v("tools.call_structured")],
                  engine_answered=True)[0] == "both"
    assert decide([_v("tools.call_structured")], [], engine_answered=False)[0] == "unknown"
    # a translating router re-encodes the engine's broken arguments: not a second bug
    assert decide([_v("anthropic.stream.event_schema"), _v("tools.arguments_schema")],
                  [_v("openai.stream.tool_arguments_string")], engine_answered=True, cross_dialect=True)[0] == "engine"
    assert symptom("anthropic.stream.stop_sequence_present") == "stream.stop_sequence_present"


def test_minimal_translation_is_documented_shape():
    out = minimal_openai_request(CLIENT)
    roles = [m["role"] for m in out["messages"]]
    assert roles[0] == "system" and "tool" in roles
    assert out["stop"] == CLIENT["stop_sequences"] and out["stream_options"] == {"include_usage": True}


def test_responses_api_hop_litellm_default_path():
    """LiteLLM's /v1/messages calls an `openai/` upstream's Responses API by default (PEERS.md)."""
    engine = {
        "model": "m", "instructions": "You are a coding agent running in a terminal.\nWorking directory: /tmp/conformance-probe\nUse the tools to act on files.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": CLIENT["messages"][0]["content"][0]["text"]}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading the token file."}]},
            {"type": "function_call", "call_id": "toolu_01ProbeRead0000000000001", "name": "Read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "toolu_01ProbeRead0000000000001", "output": "     1\u2192c0ffee15badd"},
        ],
        "tools": [{"type": "function", "name": t["name"], "parameters": t["input_schema"]} for t in CLIENT["tools"]],
        "reasoning": {"effort": "xhigh"}, "max_output_tokens": 4096, "stream": True,
    }
    report = diff(translation_checks.Hop(CLIENT, engine, "responses"), engine_path="/v1/responses")
    errors = set(_ids(report))
    assert translation_checks.MESSAGES in errors  # the mid-conversation system entry is gone
    assert translation_checks.STOPS in errors  # the Responses API has no stop sequences
    assert translation_checks.PAIRING not in errors and translation_checks.TOOLS not in errors
    assert "thinking adaptive + output_config.effort xhigh -> reasoning.effort xhigh" in report.mappings


def test_find_forwarded_tells_the_turns_of_one_loop_apart():
    from conformance.layers.hop import find_forwarded
    from conformance.layers.minimal import minimal_openai_request

    turn1 = probe_requests("m")["turn1"]
    turn2 = CLIENT
    entries = [{"seq": 0, "method": "POST", "path": "/v1/chat/completions", "body": minimal_openai_request(turn1)},
               {"seq": 1, "method": "POST", "path": "/v1/chat/completions", "body": minimal_openai_request(turn2)},
               {"seq": 2, "method": "GET", "path": "/v1/models", "body": None}]
    assert find_forwarded(entries, turn2)["seq"] == 1
    later_turn1 = dict(entries[0], seq=3)
    assert find_forwarded(entries + [later_turn1], turn2)["seq"] == 1  # the newer turn-1 request is not it
    assert find_forwarded(entries, turn1, since=2) is None


def test_a_finish_reason_may_reach_the_client_as_any_stop_its_dialect_allows():
    """chat `stop` -> end_turn or stop_sequence, content_filter -> refusal or end_turn, length ->
    max_tokens only; a finish reason no Dialect maps is not judged; a pass-through keeps its stop."""
    def stop_reason_errors(finish, seen, api="openai"):
        engine_msg = {"content": "done", "finish_reason": finish} if api == "openai" else \
            {"content": [{"type": "text", "text": "done"}], "stop_reason": finish}
        client_msg = {"content": [{"type": "text", "text": "done"}], "stop_reason": seen}
        hop = translation_checks.Hop(CLIENT, _faithful_engine_request(), api, engine_msg, client_msg)
        return [v for v in translation_checks.check_stop_reason(hop) if v.is_error]

    for finish, seen in (("stop", "end_turn"), ("stop", "stop_sequence"), ("length", "max_tokens"),
                         ("content_filter", "refusal"), ("content_filter", "end_turn"), ("unheard_of", "end_turn")):
        assert stop_reason_errors(finish, seen) == [], (finish, seen)
    for finish, seen in (("stop", "max_tokens"), ("length", "end_turn"), ("content_filter", "max_tokens")):
        assert stop_reason_errors(finish, seen), (finish, seen)
    assert stop_reason_errors("end_turn", "end_turn", "anthropic") == []
    assert stop_reason_errors("max_tokens", "end_turn", "anthropic")


def test_the_engine_wire_of_a_hop_is_told_by_its_path():
    from conformance.layers.hop import dialect_of, judge_api

    for path, wire, judged_as in (("/v1/messages", "anthropic", "anthropic"),
                                  ("/anthropic/v1/messages/count_tokens?beta=true", "anthropic", "anthropic"),
                                  ("/messages/", "anthropic", "anthropic"),
                                  ("/v1/chat/completions", "openai", "openai"),
                                  ("/openai/v1/responses", "responses", "responses"),
                                  ("/v1/models", "openai", "openai")):
        assert (dialect_of(path), judge_api(path)) == (wire, judged_as), path
