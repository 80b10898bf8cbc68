"""The driver on the Responses wire, as Codex CLI 0.171.0 drives it: first request, appended
items in Codex's measured shapes, and the self-check catching a broken driver."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conformance.loop.conversation import CodexConversation, conversation
from conformance.loop.driver import (
    LoopDriver,
    build_first_request,
    captured_working_directory,
    check_outgoing,
    find_template,
    parse_calls,
    scenario_runs_on,
)
from conformance.loop.sandbox import Sandbox, ToolOutcome
from conformance.loop.scenarios import get_scenario
from conformance.loop.tools import CLIENT_FOR_API, offered_tool_names
from conformance.wire import RESPONSES

API = RESPONSES.name
PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-mode=draft\n+mode=final\n*** End Patch\n"


def _received() -> dict:
    """An accumulated Response as the judge hands it over: reasoning, a function call, a custom call."""
    return {"id": "resp_1", "object": "response", "status": "completed", "model": "m", "output": [
        {"id": "rs_1", "type": "reasoning", "summary": [], "status": "completed", "encrypted_content": "ENC-opaque-1",
         "content": [{"type": "reasoning_text", "text": "I read first."}]},
        {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_a", "name": "exec_command",
         "arguments": "{\"cmd\":\"cat notes.txt\"}"},
        {"id": "ctc_1", "type": "custom_tool_call", "status": "completed", "call_id": "call_b", "name": "apply_patch",
         "input": PATCH},
    ], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}


def _driver() -> LoopDriver:
    return LoopDriver("http://127.0.0.1:9", API, captured_root="/nonexistent")


def _next_request(driver: LoopDriver, received: dict, tmp_path: Path) -> dict:
    body = build_first_request(driver.template, "do it [task:x]", tmp_path, None)
    calls = parse_calls(received, API, offered_tool_names(API, body))
    driver._message = received
    driver.conversation.append_turn(body, driver.echo_assistant(received), driver.result_messages(
        calls, [ToolOutcome("Chunk ID: abc123\nOutput:\nx\n"), ToolOutcome("Exit code: 0\nOutput:\nok\n")]))
    return body


def test_the_responses_wire_runs_as_codex_from_its_bundled_first_request(tmp_path: Path) -> None:
    assert CLIENT_FOR_API[API] == "codex"
    t = find_template(API, "/nonexistent")
    assert "codex" in t.source and t.request.path == "/v1/responses"
    body = t.request.body
    assert body["store"] is False and body["stream"] is True and body["include"] == ["reasoning.encrypted_content"]
    tools = {x.get("name") or x["type"]: x["type"] for x in body["tools"]}
    assert tools["exec_command"] == "function" and tools["apply_patch"] == "custom" and "web_search" in tools
    built = build_first_request(t, "Make the change. [task:x]", tmp_path, "my-model")
    assert captured_working_directory(built, API) == str(tmp_path)
    assert str(tmp_path) in json.dumps(built) and "/home/user/project" not in json.dumps(built)
    users = [i for i in built["input"] if i.get("role") == "user"]
    assert users[-1]["content"][-1]["text"] == "Make the change. [task:x]"
    assert users[0]["content"][0]["text"].startswith("<environment_context>")  # Codex's own block stays
    assert [i["role"] for i in built["input"]] == [i["role"] for i in body["input"]]
    assert built["model"] == "my-model" and built["tools"] == body["tools"]


def test_items_are_appended_as_codex_appends_them(tmp_path: Path) -> None:
    received = _received()
    body = _next_request(_driver(), received, tmp_path)
    tail = body["input"][-5:]
    # measured key order: reasoning {type,id,summary,content,encrypted_content}; function_call
    # {type,status,id,name,arguments,call_id}; custom {type,id,status,call_id,name,input}
    assert list(tail[0]) == ["type", "id", "summary", "content", "encrypted_content"]
    assert tail[0]["encrypted_content"] == "ENC-opaque-1" and tail[0]["content"] == received["output"][0]["content"]
    assert tail[1] == {"type": "function_call", "status": "completed", "id": "fc_1", "name": "exec_command",
                       "arguments": "{\"cmd\":\"cat notes.txt\"}", "call_id": "call_a"}
    assert list(tail[1]) == ["type", "status", "id", "name", "arguments", "call_id"]
    assert tail[2] == {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_b",
                       "name": "apply_patch", "input": PATCH}
    assert [(i["type"], i["call_id"], i["id"][:4]) for i in tail[3:]] == [
        ("function_call_output", "call_a", "fco_"), ("custom_tool_call_output", "call_b", "ctco")]
    assert tail[3]["output"].startswith("Chunk ID: ") and list(tail[3]) == ["type", "id", "call_id", "output"]
    assert check_outgoing(body, API, received, 2) == []


def test_a_reasoning_item_without_content_goes_back_with_content_null(tmp_path: Path) -> None:
    received = _received()
    del received["output"][0]["content"]
    body = _next_request(_driver(), received, tmp_path)
    assert body["input"][-5]["content"] is None  # as Codex 0.171.0 sent it back


def test_a_namespaced_call_goes_back_with_its_namespace() -> None:
    msg = {"output": [{"id": "fc_9", "type": "function_call", "call_id": "c9", "name": "read_file",
                       "namespace": "mcp__files", "arguments": "{\"path\":\"a\"}", "status": "completed"}]}
    echoed = CodexConversation().echo_assistant(msg)
    assert list(echoed[0]) == ["type", "status", "id", "name", "namespace", "arguments", "call_id"]


def test_self_check_catches_a_dropped_call_id(tmp_path: Path) -> None:
    received = _received()
    body = _next_request(_driver(), received, tmp_path)
    del body["input"][-1]["call_id"]
    found = check_outgoing(body, API, received, 2)
    assert {v.check_id for v in found} == {"loop.tool_result_paired"}


def test_self_check_catches_a_dropped_or_changed_reasoning_item(tmp_path: Path) -> None:
    received = _received()
    body = _next_request(_driver(), received, tmp_path)
    dropped = copy.deepcopy(body)
    del dropped["input"][-5]
    assert [v.check_id for v in check_outgoing(dropped, API, received, 2)] == ["loop.thinking_preserved"]
    changed = copy.deepcopy(body)
    changed["input"][-5]["encrypted_content"] = "something else"
    assert [v.check_id for v in check_outgoing(changed, API, received, 3)] == ["loop.thinking_preserved"]


def test_self_check_catches_an_output_of_the_wrong_kind(tmp_path: Path) -> None:
    received = _received()
    body = _next_request(_driver(), received, tmp_path)
    body["input"][-1]["type"] = "function_call_output"  # a custom call answered as a function call
    found = check_outgoing(body, API, received, 2)
    assert [v.check_id for v in found] == ["loop.tool_result_paired"] and "wrong kind" in found[0].message


def test_custom_calls_are_well_formed_and_run_with_their_raw_input(tmp_path: Path) -> None:
    received = _received()
    calls = parse_calls(received, API, ["exec_command", "apply_patch"])
    assert [(c.name, c.problem, c.call.kind) for c in calls] == [
        ("exec_command", None, "function"), ("apply_patch", None, "custom")]
    sb = Sandbox(tmp_path / "root", "codex")
    sb.seed({"notes.txt": "mode=draft\n"})
    outcomes = [_driver().run_call(sb, c) for c in calls]
    assert outcomes[0].text.endswith("Output:\nmode=draft\n")
    assert outcomes[1].text.endswith("Success. Updated the following files:\nM notes.txt\n"), outcomes[1].text
    assert sb.read_text("notes.txt") == "mode=final\n"


def test_the_namespace_scenario_attaches_the_files_server_as_codex_does(tmp_path: Path) -> None:
    scenario = get_scenario("namespace-read")
    assert scenario_runs_on(scenario, API)
    assert not scenario_runs_on(scenario, "anthropic") and not scenario_runs_on(scenario, "openai")
    body = build_first_request(find_template(API, "/nonexistent"), scenario.prompt, tmp_path, None)
    conversation(API).attach_mcp_server(body, "files")
    kinds = [(t["type"], t.get("name")) for t in body["tools"]]
    assert ("namespace", "mcp__files") in kinds
    assert kinds.index(("namespace", "mcp__files")) < kinds.index(("web_search", None))
    assert "read_file" in offered_tool_names(API, body)
    msg = {"output": [{"id": "fc_9", "type": "function_call", "call_id": "c9", "name": "read_file",
                       "namespace": "mcp__files", "arguments": "{\"path\":\"code.txt\"}", "status": "completed"}]}
    calls = parse_calls(msg, API, offered_tool_names(API, body))
    sb = Sandbox(tmp_path / "root", "codex")
    sb.seed({"code.txt": "code=abc\n"})
    outcome = _driver().run_call(sb, calls[0])
    assert not outcome.is_error, outcome.text
    assert outcome.parts[0]["text"].startswith("Wall time: ") and outcome.parts[1] == {
        "type": "input_text", "text": "code=abc\n"}
    items = conversation(API).results_for(msg, ["c9"], [outcome])
    assert items[0]["type"] == "function_call_output" and items[0]["output"] == outcome.parts
    # without its namespace the call is not Codex's tool: the sandbox says so
    flat = sb.run("read_file", {"path": "code.txt"})
    assert flat.is_error and flat.text == "unsupported call: read_file"
