"""The driver without a real server: its self-check on its own next request, the loop checks at
work on scripted turns, the persona a template's client gets, and which wire runs a scenario."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conformance.capture.format import CapturedRequest
from conformance.checks.loop import parse_calls
from conformance.clients import profile
from conformance.loop.conversation import conversation_for
from conformance.loop.driver import LoopDriver, check_outgoing, persona_for, scenario_runs_on
from conformance.loop.sandbox import Sandbox
from conformance.loop.scenarios import get_scenario
from conformance.loop.templates import Template, find_template
from conformance.loop.voices import ToolOutcome
from conformance.net.transport import RawExchange
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

from .conftest import received_anthropic, received_responses


def _next_anthropic(received: dict) -> dict:
    talk = conversation_for(ANTHROPIC)
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]}
    return talk.with_turn(body, talk.echo_assistant(received), talk.result_messages(
        ["toolu_1", "toolu_2"], [ToolOutcome("1\ta"), ToolOutcome("nope", True)]), talk.cache_breakpoint(body))


def test_self_check_passes_the_clients_own_shapes_and_catches_a_dropped_id_and_signature() -> None:
    received = received_anthropic()
    assert check_outgoing(_next_anthropic(received), ANTHROPIC, received, 2) == []
    body = _next_anthropic(received)
    body["messages"][2]["content"][0].pop("tool_use_id")
    assert {v.check_id for v in check_outgoing(body, ANTHROPIC, received, 3)} == {"loop.tool_result_paired"}
    body = _next_anthropic(received)
    body["messages"][1]["content"][0]["signature"] = ""
    found = check_outgoing(body, ANTHROPIC, received, 3)
    assert [v.check_id for v in found] == ["loop.thinking_preserved"] and found[0].where.turn == 3
    assert found[0].where.pointer == "/messages/1/content"
    both = _next_anthropic(received)
    both["messages"][1]["content"][0]["signature"] = ""
    both["messages"][2]["content"][1]["tool_use_id"] = "toolu_9"
    assert [v.check_id for v in check_outgoing(both, ANTHROPIC, received, 2)] == [
        "loop.thinking_preserved", "loop.tool_result_paired"]  # every bookkeeping fault, not the first only
    [none] = check_outgoing({"messages": [{"role": "user", "content": "hi"}]}, ANTHROPIC, received, 2)
    assert none.check_id == "loop.tool_result_paired" and "no assistant message" in none.message


def _codex_next(received: dict, tmp_path: Path) -> dict:
    talk = conversation_for(RESPONSES)
    body = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]}
    return talk.with_turn(body, talk.echo_assistant(received), talk.results_for(
        received, ["call_a", "call_b"], [ToolOutcome("x"), ToolOutcome("y")]))


def test_self_check_on_the_responses_wire(tmp_path: Path) -> None:
    received = received_responses()
    body = _codex_next(received, tmp_path)
    assert check_outgoing(body, RESPONSES, received, 2) == []
    dropped_id = copy.deepcopy(body)
    del dropped_id["input"][-1]["call_id"]
    assert {v.check_id for v in check_outgoing(dropped_id, RESPONSES, received, 2)} == {"loop.tool_result_paired"}
    dropped = copy.deepcopy(body)
    del dropped["input"][-5]
    assert [v.check_id for v in check_outgoing(dropped, RESPONSES, received, 2)] == ["loop.thinking_preserved"]
    changed = copy.deepcopy(body)
    changed["input"][-5]["encrypted_content"] = "something else"
    assert [v.check_id for v in check_outgoing(changed, RESPONSES, received, 3)] == ["loop.thinking_preserved"]
    wrong = copy.deepcopy(body)
    wrong["input"][-1]["type"] = "function_call_output"  # a custom call answered as a function call
    found = check_outgoing(wrong, RESPONSES, received, 2)
    assert [v.check_id for v in found] == ["loop.tool_result_paired"] and "wrong kind" in found[0].message


def test_custom_calls_run_with_their_raw_input(tmp_path: Path) -> None:
    received = received_responses()
    calls = parse_calls(received, RESPONSES, ["exec_command", "apply_patch"])
    assert [(c.name, c.problem, c.call.kind) for c in calls] == [
        ("exec_command", None, "function"), ("apply_patch", None, "custom")]
    sb = Sandbox(tmp_path / "root", profile("codex").persona)
    sb.seed({"notes.txt": "mode=draft\n"})
    driver = LoopDriver("http://127.0.0.1:9", RESPONSES, captured_root="/nonexistent")
    outcomes = [driver.run_call(sb, c) for c in calls]
    assert outcomes[0].text.endswith("Output:\nmode=draft\n")
    assert outcomes[1].text.endswith("Success. Updated the following files:\nM notes.txt\n"), outcomes[1].text
    assert sb.read_text("notes.txt") == "mode=final\n"
    bad = parse_calls({"output": [{"type": "function_call", "call_id": "c", "name": "rm", "arguments": "{}"}]},
                      RESPONSES, ["exec_command"])[0]
    refused = driver.run_call(sb, bad)
    assert refused.is_error and refused.text.startswith("The arguments provided to the tool are invalid: tool 'rm'")


def test_scenarios_run_where_the_wires_client_can_run_them() -> None:
    namespace, resume = get_scenario("namespace-read"), get_scenario("resume-session")
    assert scenario_runs_on(namespace, RESPONSES) and scenario_runs_on(resume, RESPONSES)
    for wire in (ANTHROPIC, CHAT):
        assert not scenario_runs_on(namespace, wire) and not scenario_runs_on(resume, wire)
        assert scenario_runs_on(get_scenario("sum-numbers"), wire)


def test_a_known_client_plays_its_persona_and_an_unknown_one_its_tools_shapes() -> None:
    known = find_template(ANTHROPIC, "/nonexistent")
    assert persona_for(known, known.request.body, ANTHROPIC) is profile("claude-code").persona
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [
        {"name": "read_file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "fetch_url", "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}}}]}
    unknown = Template(CapturedRequest("POST", "/v1/messages", "", {}, body), "acme", "acme-agent")
    persona = persona_for(unknown, body, ANTHROPIC)
    assert persona.voice == "generic" and list(persona.tools) == ["read_file"]
    # a namespaced tool is bound under `namespace.name`, as the sandbox looks it up
    ns_body = {"input": [], "tools": [{"type": "namespace", "name": "mcp__docs", "tools": [
        {"type": "function", "name": "read_doc", "parameters": {"type": "object", "properties": {"path": {}}}}]}]}
    ns = Template(CapturedRequest("POST", "/v1/responses", "", {}, ns_body), "acme", "acme-agent")
    assert list(persona_for(ns, ns_body, RESPONSES).tools) == ["mcp__docs.read_doc"]


# ----------------------------------------------------------------------------- a turn cut by the cap
def _sse(wire, args: str, stop: str) -> bytes:
    """One streamed turn: a call to write / Write whose arguments text is `args`, then `stop`."""
    def ev(data: dict) -> str:
        return (f"event: {data['type']}\n" if wire is ANTHROPIC else "") + f"data: {json.dumps(data)}\n\n"

    if wire is ANTHROPIC:
        return "".join(ev(e) for e in [
            {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                                  "content": [], "stop_reason": None, "stop_sequence": None,
                                                  "usage": {"input_tokens": 10, "output_tokens": 1}}},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": args}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
             "usage": {"output_tokens": 64}},
            {"type": "message_stop"}]).encode()
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return "".join([
        ev({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "write", "arguments": args}}]},
            "finish_reason": None}]}),
        ev({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": stop}]}),
        ev({**chunk, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 64, "total_tokens": 74}}),
        "data: [DONE]\n\n"]).encode()


def _run_one_turn(wire, stream: bytes, tmp_path: Path):
    def sender(req, body: bytes) -> RawExchange:
        return RawExchange("POST", f"http://127.0.0.1:9{req.path}", {}, body, status=200,
                           response_headers={"content-type": "text/event-stream"}, chunks=[(0.01, stream)])

    driver = LoopDriver("http://127.0.0.1:9", wire, model="m", captured_root="/nonexistent", workdir=tmp_path,
                        sender=sender)
    return driver.run(get_scenario("write-static"), rng_seed=1)


CUT = {  # wire -> (the cut arguments, the cut stop, the tool stop, the tool's name, the stop field)
    ANTHROPIC.name: ('{"file_path": "hello.txt", "content": "hello conf', "max_tokens", "tool_use", "Write",
                     "stop_reason"),
    CHAT.name: ('{"filePath": "hello.txt", "content": "hello conf', "length", "tool_calls", "write", "finish_reason"),
}


@pytest.mark.parametrize("wire", [ANTHROPIC, CHAT], ids=lambda w: w.name)
def test_a_turn_cut_inside_a_tool_call_ends_the_loop_as_a_stop_reason(wire, tmp_path: Path) -> None:
    args, cut, _, name, field = CUT[wire.name]
    report = _run_one_turn(wire, _sse(wire, args, cut), tmp_path)
    assert report.ended == "exchange" and len(report.turns) == 1 and report.turns[0].outcomes == []
    [err] = [v for v in report.violations if v.is_error]
    assert err.check_id == "loop.stop_reason" and err.where.turn == 1
    assert err.message == f"the turn was cut by the output cap ({field} {cut!r}) inside tool call 1 ({name})"
    assert [v.check_id for v in report.violations if not v.is_error] == ["tools.call_cut"]
    assert "loop.stop_reason" in report.title()
    outcomes = {r.check_id: r.outcome for r in report.results("t")}
    assert outcomes["loop.stop_reason"] == "failed" and outcomes["loop.tool_call_wellformed"] == "passed"
    assert "loop.completion_check" not in outcomes  # a loop that broke has no verdict on the task


@pytest.mark.parametrize("wire", [ANTHROPIC, CHAT], ids=lambda w: w.name)
def test_the_same_broken_call_without_a_cut_is_still_the_targets_fault(wire, tmp_path: Path) -> None:
    args, _, stop, _, _ = CUT[wire.name]
    report = _run_one_turn(wire, _sse(wire, args, stop), tmp_path)
    rule = "anthropic.stream.tool_input_json" if wire is ANTHROPIC else "openai.stream.tool_arguments_json"
    assert report.ended == "exchange"
    assert {v.check_id for v in report.violations if v.is_error} == {rule, "tools.arguments_schema"}


def test_salt_goes_first_in_the_system_prompt_and_stays(tmp_path: Path) -> None:
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread() as url:
        for wire in (ANTHROPIC, CHAT):
            report = LoopDriver(url, wire, workdir=tmp_path, salt_token="tok123").run(get_scenario("write-static"))
            report.raise_for_failure()
            for t in report.turns:
                system = t.request["system"][0]["text"] if wire is ANTHROPIC else t.request["messages"][0]["content"]
                assert "tok123" in system[:40]
