"""The driver's request building, template choice and self-check, without a server."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conformance.capture.format import Capture, CapturedRequest, Exchange, load_capture, save_capture
from conformance.loop.driver import (
    TEMPLATES_DIR,
    LoopDriver,
    build_first_request,
    captured_working_directory,
    check_outgoing,
    find_template,
    parse_calls,
)
from conformance.loop.sandbox import ToolOutcome
from conformance.loop.tools import offered_tool_names

PROMPT = "Read the file numbers.txt and write the sum. [task:sum-numbers]"


def _bundled(client: str) -> Capture:
    return load_capture(TEMPLATES_DIR / f"{client}.json")


def test_bundled_templates_are_real_first_requests() -> None:
    cc = find_template("anthropic", Path("/nonexistent"))
    oc = find_template("openai", Path("/nonexistent"))
    assert "bundled fallback" in cc.source and "bundled fallback" in oc.source
    assert cc.request.headers["user-agent"].startswith("claude-cli/")
    assert oc.request.headers["user-agent"].startswith("opencode/")
    assert {"Read", "Write", "Edit", "Bash"} <= set(offered_tool_names("anthropic", cc.request.body))
    assert {"read", "write", "edit", "bash", "glob", "grep"} <= set(offered_tool_names("openai", oc.request.body))
    for t in (cc, oc):
        raw = json.dumps(t.request.body)
        assert "sk-test" not in raw and "<redacted>" not in raw


def test_first_request_keeps_claude_codes_structure(tmp_path: Path) -> None:
    t = find_template("anthropic", Path("/nonexistent"))
    body = build_first_request(t, PROMPT, tmp_path, "my-model")
    orig = t.request.body
    assert body["model"] == "my-model"
    assert list(body) == list(orig)  # key order as the client sends it
    user = body["messages"][0]
    assert user["role"] == "user"
    assert user["content"][0]["text"].startswith("<system-reminder>")  # reminder kept
    assert user["content"][-1]["text"] == PROMPT
    assert user["content"][-1]["cache_control"] == orig["messages"][0]["content"][-1]["cache_control"]
    assert body["messages"][1]["role"] == "system"  # the mid-conversation system entry stays
    assert captured_working_directory(body) == str(tmp_path)
    assert "/tmp/project" not in json.dumps(body["system"])
    assert body["tools"] == json.loads(json.dumps(orig["tools"]).replace("/tmp/project", str(tmp_path)))


def test_first_request_keeps_opencodes_quotes(tmp_path: Path) -> None:
    t = find_template("openai", Path("/nonexistent"))
    assert t.request.body["messages"][1]["content"].startswith('"')
    body = build_first_request(t, PROMPT, tmp_path, None)
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][1]["content"] == f'"{PROMPT}"'
    assert body["model"] == t.request.body["model"]
    assert captured_working_directory(body) == str(tmp_path)


def test_template_comes_from_the_capture_corpus_when_present(tmp_path: Path) -> None:
    src = _bundled("claude-code")
    body = copy.deepcopy(src.exchanges[0].request.body)
    body["messages"][0]["content"][-1]["text"] = "corpus prompt"
    older = Capture("claude-code", "2.1.90", "default", [Exchange(CapturedRequest("POST", "/v1/messages", "", {}, body))])
    newer = Capture("claude-code", "2.1.197", "default", [Exchange(CapturedRequest("POST", "/v1/messages", "beta=true", {}, body))])
    other = Capture("claude-code", "2.1.197", "effort-xhigh", [Exchange(CapturedRequest("POST", "/v1/messages", "", {}, body))])
    save_capture(older, tmp_path / "claude-code" / "2.1.90" / "default.json")
    save_capture(newer, tmp_path / "claude-code" / "2.1.197" / "default.json")
    save_capture(other, tmp_path / "claude-code" / "2.1.197" / "effort-xhigh.json")
    t = find_template("anthropic", tmp_path)
    assert t.source.startswith("claude-code/2.1.197/default")
    assert t.request.query == "beta=true"
    # an opencode capture is not taken for the Anthropic dialect, and vice versa
    assert "bundled" in find_template("openai", tmp_path).source


def _received_anthropic() -> dict:
    return {"role": "assistant", "stop_reason": "tool_use", "content": [
        {"type": "thinking", "thinking": "I read first.", "signature": "c2ln"},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/x/a.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/x/b.txt"}},
    ]}


def _next_request(driver: LoopDriver, received: dict) -> dict:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]}
    calls = parse_calls(received, driver.api, ["Read", "read"])
    body["messages"].append(driver.echo_assistant(received))
    body["messages"].extend(driver.result_messages(calls, [ToolOutcome("1\ta"), ToolOutcome("nope", True)]))
    if driver.api == "anthropic":
        driver._move_cache_control(body, {"type": "ephemeral"})
    return body


def test_anthropic_results_are_appended_as_claude_code_does() -> None:
    d = LoopDriver("http://127.0.0.1:9", "anthropic", captured_root="/nonexistent")
    received = _received_anthropic()
    body = _next_request(d, received)
    assert body["messages"][1]["content"] == received["content"]  # verbatim, signature included
    results = body["messages"][2]["content"]
    assert results[0] == {"tool_use_id": "toolu_1", "type": "tool_result", "content": "1\ta"}
    assert results[1] == {"type": "tool_result", "content": "nope", "is_error": True, "tool_use_id": "toolu_2",
                          "cache_control": {"type": "ephemeral"}}
    assert "cache_control" not in body["messages"][0]["content"][0]  # moved to the last block
    assert check_outgoing(body, "anthropic", received, 2) == []


def test_openai_results_are_appended_as_opencode_does() -> None:
    d = LoopDriver("http://127.0.0.1:9", "openai", captured_root="/nonexistent")
    received = {"role": "assistant", "content": None, "finish_reason": "tool_calls", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"/x/a\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"/x/b\"}"}},
    ]}
    body = _next_request(d, received)
    assert body["messages"][1] == {"role": "assistant", "content": "", "tool_calls": received["tool_calls"]}
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "1\ta"}
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_2", "content": "nope"}
    assert check_outgoing(body, "openai", received, 2) == []


def test_self_check_catches_a_dropped_id_and_a_dropped_signature() -> None:
    d = LoopDriver("http://127.0.0.1:9", "anthropic", captured_root="/nonexistent")
    received = _received_anthropic()
    body = _next_request(d, received)
    body["messages"][2]["content"][0].pop("tool_use_id")
    ids = {v.check_id for v in check_outgoing(body, "anthropic", received, 3)}
    assert ids == {"loop.tool_result_paired"}
    body = _next_request(d, received)
    body["messages"][1]["content"][0]["signature"] = ""
    found = check_outgoing(body, "anthropic", received, 3)
    assert [v.check_id for v in found] == ["loop.thinking_preserved"] and found[0].where.turn == 3


def test_parse_calls_flags_malformed_calls() -> None:
    msg = {"tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\": "}},
        {"id": "", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        {"id": "c3", "type": "function", "function": {"name": "rm", "arguments": "{}"}},
        {"id": "c4", "type": "function", "function": {"name": "read", "arguments": "[1]"}},
        {"id": "c5", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"a\"}"}},
    ]}
    calls = parse_calls(msg, "openai", ["read"])
    assert [bool(c.problem) for c in calls] == [True, True, True, True, False]
    assert "not JSON" in calls[0].problem and "no id" in calls[1].problem and "not offered" in calls[2].problem


def test_the_bundled_corpus_provides_both_templates() -> None:
    from conformance.core.paths import captured_dir

    for api, client in (("anthropic", "claude-code"), ("openai", "opencode")):
        t = find_template(api, captured_dir())
        assert t.source.startswith(f"{client}/") and "bundled" not in t.source, t.source
        assert t.request.api == api


def test_salt_goes_first_in_the_system_prompt_and_stays(tmp_path: Path) -> None:
    from conformance.engine.launch import serve_engine_in_thread
    from conformance.loop.scenarios import get_scenario

    with serve_engine_in_thread() as url:
        for api in ("anthropic", "openai"):
            report = LoopDriver(url, api, workdir=tmp_path, salt_token="tok123").run(get_scenario("write-static"))
            report.raise_for_failure()
            for t in report.turns:
                system = t.request["system"][0]["text"] if api == "anthropic" else t.request["messages"][0]["content"]
                assert "tok123" in system[:40]


# ----------------------------------------------------------------------------- a turn cut by the cap
def _sse(api: str, args: str, stop: str) -> bytes:
    """One streamed turn: a call to write / Write whose arguments text is `args`, then `stop`."""
    def ev(data: dict) -> str:
        return (f"event: {data['type']}\n" if api == "anthropic" else "") + f"data: {json.dumps(data)}\n\n"

    if api == "anthropic":
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


def _run_one_turn(api: str, stream: bytes, tmp_path: Path):
    from conformance.loop.scenarios import get_scenario
    from conformance.net.transport import RawExchange

    def sender(req, body: bytes) -> RawExchange:
        return RawExchange("POST", f"http://127.0.0.1:9{req.path}", {}, body, status=200,
                           response_headers={"content-type": "text/event-stream"}, chunks=[(0.01, stream)])

    driver = LoopDriver("http://127.0.0.1:9", api, model="m", captured_root="/nonexistent", workdir=tmp_path,
                        sender=sender)
    return driver.run(get_scenario("write-static"), rng_seed=1)


CUT_ARGS = {"anthropic": '{"file_path": "hello.txt", "content": "hello conf',
            "openai": '{"filePath": "hello.txt", "content": "hello conf'}
CUT_STOP = {"anthropic": "max_tokens", "openai": "length"}
TOOL_STOP = {"anthropic": "tool_use", "openai": "tool_calls"}


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_turn_cut_inside_a_tool_call_ends_the_loop_as_a_stop_reason(api: str, tmp_path: Path) -> None:
    report = _run_one_turn(api, _sse(api, CUT_ARGS[api], CUT_STOP[api]), tmp_path)
    assert report.ended == "exchange" and len(report.turns) == 1 and report.turns[0].outcomes == []
    [err] = [v for v in report.violations if v.is_error]
    field = "stop_reason" if api == "anthropic" else "finish_reason"
    name = "Write" if api == "anthropic" else "write"
    assert err.check_id == "loop.stop_reason" and err.where.turn == 1
    assert err.message == (f"the turn was cut by the output cap ({field} {CUT_STOP[api]!r}) inside tool call 1 "
                           f"({name})")
    assert [v.check_id for v in report.violations if not v.is_error] == ["tools.call_cut"]
    assert "loop.stop_reason" in report.title()


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_same_broken_call_without_a_cut_is_still_the_targets_fault(api: str, tmp_path: Path) -> None:
    report = _run_one_turn(api, _sse(api, CUT_ARGS[api], TOOL_STOP[api]), tmp_path)
    wire = "anthropic.stream.tool_input_json" if api == "anthropic" else "openai.stream.tool_arguments_json"
    assert report.ended == "exchange"
    assert {v.check_id for v in report.violations if v.is_error} == {wire, "tools.arguments_schema"}
