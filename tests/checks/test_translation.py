"""translation.* checks on hops shaped like what real routers send (facts from LiteLLM's and
claude-code-router's Anthropic adapters, cited in conformance/router/translate.py); the rules are
registered with their code and run from the registry."""

from __future__ import annotations

import dataclasses
import json

from conformance.checks import translation as translation_checks
from conformance.checks.translation import Hop
from conformance.core.registry import checks_for, get
from conformance.layers.hop import diff, probe_requests
from conformance.layers.minimal import minimal_openai_request
from conformance.router.translate import anthropic_to_openai
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

CLIENT = probe_requests("m")["turn2"]


def _ids(report, severity="error"):
    return sorted({v.check_id for v in report.violations if v.severity == severity})


def _faithful_engine_request(**changes):
    """What a faithful translating router sends for CLIENT (the reference router's mapping)."""
    body, _ = anthropic_to_openai(CLIENT, model="m")
    body.update(changes)
    return body


def test_faithful_translation_has_no_errors_and_lists_what_it_lost():
    report = diff(Hop(ANTHROPIC, CLIENT, CHAT, _faithful_engine_request()))
    assert _ids(report) == []
    assert "output_config.effort xhigh -> reasoning_effort high" in " ".join(report.mappings)
    lost = " ".join(report.lost)
    assert "signatures" in lost and "cache_control" in lost


def test_litellm_shape_drops_the_mid_conversation_system_entry_and_passes_effort_verbatim():
    engine = _faithful_engine_request(reasoning_effort="xhigh")
    # LiteLLM translates only user/assistant roles: Claude Code's role: system entry vanishes.
    engine["messages"] = [m for m in engine["messages"] if not (m["role"] == "system" and "Mid-conversation" in str(m["content"]))]
    report = diff(Hop(ANTHROPIC, CLIENT, CHAT, engine))
    assert translation_checks.MESSAGES in _ids(report)
    assert "thinking adaptive + output_config.effort xhigh -> reasoning_effort xhigh" in report.mappings


def test_claude_code_router_shape_stringifies_list_tool_results_and_drops_thinking():
    engine = _faithful_engine_request()
    for m in engine["messages"]:
        m.pop("reasoning_content", None)
        if m["role"] == "tool":
            m["content"] = json.dumps([{"type": "text", "text": "     1\u2192c0ffee15badd"}], ensure_ascii=False)
    report = diff(Hop(ANTHROPIC, CLIENT, CHAT, engine))
    # the result's text is still inside the JSON string (a warning); thinking history loss is by construction (info)
    assert translation_checks.PAIRING not in _ids(report) and translation_checks.PAIRING in _ids(report, "warning")
    assert any("assistant thinking sent back" in v.message for v in report.by_check[translation_checks.THINKING])


def test_rewritten_tool_result_id_breaks_pairing():
    engine = _faithful_engine_request()
    for m in engine["messages"]:
        if m["role"] == "tool":
            m["tool_call_id"] = "call_0"
    report = diff(Hop(ANTHROPIC, CLIENT, CHAT, engine))
    assert {translation_checks.PAIRING, translation_checks.TOOL_IDS} <= set(_ids(report))


def test_schema_change_and_dropped_stop_sequences_are_errors():
    engine = _faithful_engine_request()
    engine.pop("stop")
    engine["tools"][0]["function"]["parameters"] = {"type": "object", "properties": {"path": {"type": "string"}}}
    report = diff(Hop(ANTHROPIC, CLIENT, CHAT, engine))
    assert {translation_checks.TOOLS, translation_checks.STOPS} <= set(_ids(report))
    schema_v = next(v for v in report.by_check[translation_checks.TOOLS] if v.is_error)
    assert schema_v.where.pointer.startswith("/tools/0/input_schema")


def test_response_side_stop_reason_usage_and_thinking():
    engine_msg = {"content": None, "reasoning_content": "I will read.", "finish_reason": "tool_calls",
                  "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}],
                  "usage": {"prompt_tokens": 100, "completion_tokens": 20}}
    client_msg = {"content": [{"type": "tool_use", "id": "call_1", "name": "Read", "input": {}}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 0, "output_tokens": 0}}
    report = diff(Hop(ANTHROPIC, CLIENT, CHAT, _faithful_engine_request(), engine_msg, client_msg))
    assert {translation_checks.STOP_REASON, translation_checks.USAGE, translation_checks.THINKING} <= set(_ids(report))


def test_anthropic_pass_through_must_keep_signatures_and_cache_control():
    engine = json.loads(json.dumps(CLIENT))
    engine["system"][1].pop("cache_control")
    engine["messages"][2]["content"][0]["signature"] = "altered"
    report = diff(Hop(ANTHROPIC, CLIENT, ANTHROPIC, engine))
    assert {translation_checks.CACHE, translation_checks.THINKING} <= set(_ids(report))


def test_injection_probe_with_tools_fails_only_when_opted_in():
    body = probe_requests("m", injection=True)["injection"]
    engine = minimal_openai_request(body)
    assert translation_checks.INJECTION in _ids(diff(Hop(ANTHROPIC, body, CHAT, engine, injection_probe=True)))
    assert translation_checks.INJECTION not in _ids(diff(Hop(ANTHROPIC, body, CHAT, engine, injection_probe=False)))
    engine.pop("tools")
    assert translation_checks.INJECTION not in _ids(diff(Hop(ANTHROPIC, body, CHAT, engine, injection_probe=True)))


def test_responses_api_hop_litellm_default_path():
    """LiteLLM's /v1/messages calls an `openai/` upstream's Responses API by default (docs/peers.md, litellm-responses-engine)."""
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
    report = diff(Hop(ANTHROPIC, CLIENT, RESPONSES, engine), engine_path="/v1/responses")
    errors = set(_ids(report))
    assert translation_checks.MESSAGES in errors  # the mid-conversation system entry is gone
    assert translation_checks.STOPS in errors  # the Responses API has no stop sequences
    assert translation_checks.PAIRING not in errors and translation_checks.TOOLS not in errors
    assert "thinking adaptive + output_config.effort xhigh -> reasoning.effort xhigh" in report.mappings


def test_a_finish_reason_may_reach_the_client_as_any_stop_its_dialect_allows():
    """chat `stop` -> end_turn or stop_sequence, content_filter -> refusal or end_turn, length ->
    max_tokens only; a finish reason no Dialect maps is not judged; a pass-through keeps its stop."""
    def stop_reason_errors(finish, seen, engine=CHAT):
        engine_msg = {"content": "done", "finish_reason": finish} if engine is CHAT else \
            {"content": [{"type": "text", "text": "done"}], "stop_reason": finish}
        client_msg = {"content": [{"type": "text", "text": "done"}], "stop_reason": seen}
        hop = Hop(ANTHROPIC, CLIENT, engine, _faithful_engine_request(), engine_msg, client_msg)
        return [v for v in get(translation_checks.STOP_REASON).run(hop) if v.is_error]

    for finish, seen in (("stop", "end_turn"), ("stop", "stop_sequence"), ("length", "max_tokens"),
                         ("content_filter", "refusal"), ("content_filter", "end_turn"), ("unheard_of", "end_turn")):
        assert stop_reason_errors(finish, seen) == [], (finish, seen)
    for finish, seen in (("stop", "max_tokens"), ("length", "end_turn"), ("content_filter", "max_tokens")):
        assert stop_reason_errors(finish, seen), (finish, seen)
    assert stop_reason_errors("end_turn", "end_turn", ANTHROPIC) == []
    assert stop_reason_errors("max_tokens", "end_turn", ANTHROPIC)


# ----------------------------------------------------------------------------- the registry runs them
ALL = [translation_checks.MESSAGES, translation_checks.TOOLS, translation_checks.PAIRING, translation_checks.TOOL_IDS,
       translation_checks.THINKING, translation_checks.CACHE, translation_checks.STOPS, translation_checks.STOP_REASON,
       translation_checks.USAGE, translation_checks.PARAMS, translation_checks.FIELDS, translation_checks.INJECTION]


def test_every_translation_rule_is_registered_once_with_its_code_and_when_it_applies():
    specs = checks_for("hop")
    assert [s.id for s in specs] == ALL  # the report's order
    for spec in specs:
        assert spec.run is not None and isinstance(spec.applies, translation_checks.Applies), spec.id
    assert translation_checks.judged_ids(ANTHROPIC) == [c for c in ALL if c != translation_checks.FIELDS]
    assert translation_checks.judged_ids(RESPONSES) == [translation_checks.MESSAGES, translation_checks.TOOLS,
                                                        translation_checks.PAIRING, translation_checks.THINKING,
                                                        translation_checks.FIELDS]
    assert translation_checks.judged_ids(CHAT) == []


def test_the_family_is_chosen_by_what_the_client_wire_is_not_by_its_name():
    """A wire named otherwise but translated by routers gets the translated rules; one that carries
    items gets the items rules; a wire with neither property has no rules."""
    translated = dataclasses.replace(ANTHROPIC, name="toy-messages")
    items = dataclasses.replace(RESPONSES, name="toy-items")
    plain = dataclasses.replace(ANTHROPIC, name="toy-plain", router_translates=False)
    engine = _faithful_engine_request()
    assert set(translation_checks.check_hop(Hop(translated, CLIENT, CHAT, engine))) == \
        set(translation_checks.check_hop(Hop(ANTHROPIC, CLIENT, CHAT, engine)))
    assert translation_checks.check_hop(Hop(plain, CLIENT, CHAT, engine)) == {}
    assert translation_checks.judged_ids(items) == translation_checks.judged_ids(RESPONSES)
    body = {"model": "m", "input": "hi", "store": False}
    assert set(translation_checks.check_hop(Hop(items, body, items, dict(body)))) == {
        translation_checks.MESSAGES, translation_checks.FIELDS}
    # items in front of another wire: no rules yet, every check skipped
    assert translation_checks.check_hop(Hop(items, body, CHAT, {"model": "m", "messages": []})) == {}


def test_a_hop_holds_wires_and_a_pass_through_is_the_client_wire_reaching_the_engine():
    hop = Hop(ANTHROPIC, CLIENT, ANTHROPIC, json.loads(json.dumps(CLIENT)))
    assert hop.pass_through and not Hop(ANTHROPIC, CLIENT, CHAT, _faithful_engine_request()).pass_through
    assert not Hop(dataclasses.replace(ANTHROPIC, name="toy"), CLIENT, ANTHROPIC, CLIENT).pass_through
    assert translation_checks.check_hop(Hop(ANTHROPIC, CLIENT, CHAT, None)) == {}  # nothing reached the engine


def test_stream_usage_is_asked_for_only_on_a_wire_that_needs_it():
    turn1 = probe_requests("m")["turn1"]
    engine = minimal_openai_request(turn1)
    mappings = diff(Hop(ANTHROPIC, turn1, CHAT, engine)).mappings
    assert "stream -> stream + stream_options.include_usage" in mappings
    engine.pop("stream_options")
    assert "stream -> stream (usage not requested)" in diff(Hop(ANTHROPIC, turn1, CHAT, engine)).mappings
    responses_engine = {"model": "m", "input": [], "stream": True}
    assert not [m for m in diff(Hop(ANTHROPIC, turn1, RESPONSES, responses_engine)).mappings if m.startswith("stream")]


def _with_system_message(engine: dict, text: str) -> dict:
    engine["messages"] = [{"role": "system", "content": text}] + [
        m for m in engine["messages"] if not (m["role"] == "system" and m is engine["messages"][0])]
    return engine


def test_system_blocks_trimmed_and_joined_by_newline_are_preserved():
    # claude-code-router 3.1.1's system mapping: each text block trimmed, the blocks joined with
    # "\n" into one system message. Whitespace around a block and the joining are the router's to
    # choose; the client's joined text (one newline between the blocks, two with the trailing one)
    # no longer occurs verbatim, yet nothing the agent relies on was lost.
    client = json.loads(json.dumps(CLIENT))
    client["system"][0]["text"] += "\n"
    client["system"][1]["text"] = "\n" + client["system"][1]["text"] + "\n"
    engine, _ = anthropic_to_openai(client, model="m")
    ccr_311 = "\n".join(b["text"].strip() for b in client["system"])
    _with_system_message(engine, ccr_311)
    report = diff(Hop(ANTHROPIC, client, CHAT, engine))
    assert translation_checks.MESSAGES not in _ids(report) + _ids(report, "warning")


def test_a_changed_word_inside_a_system_block_is_still_lost():
    client = json.loads(json.dumps(CLIENT))
    engine, _ = anthropic_to_openai(client, model="m")
    changed = "\n".join(b["text"].strip() for b in client["system"]).replace("Use the tools", "Use tools")
    _with_system_message(engine, changed)
    report = diff(Hop(ANTHROPIC, client, CHAT, engine))
    assert translation_checks.MESSAGES in _ids(report)
    assert any("top-level system prompt never reached" in v.message for v in report.by_check[translation_checks.MESSAGES])


def test_whitespace_inside_a_system_block_is_content():
    client = json.loads(json.dumps(CLIENT))
    engine, _ = anthropic_to_openai(client, model="m")
    squeezed = "\n".join(b["text"].strip() for b in client["system"]).replace("/tmp/conformance-probe\nUse",
                                                                              "/tmp/conformance-probeUse")
    _with_system_message(engine, squeezed)
    assert translation_checks.MESSAGES in _ids(diff(Hop(ANTHROPIC, client, CHAT, engine)))
