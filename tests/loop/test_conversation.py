"""How each wire's client carries its conversation on: the shapes appended after a turn, down to
key order (measured, docs/loop.md), and the writers returning changed copies."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conformance.loop.conversation import LOOP_WIRES, conversation_for
from conformance.loop.templates import build_first_request, find_template
from conformance.loop.voices import ToolOutcome
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

from .conftest import PATCH, received_anthropic, received_responses


def test_a_conversation_is_chosen_by_the_wire_object() -> None:
    assert [conversation_for(w).wire for w in LOOP_WIRES] == [ANTHROPIC, CHAT, RESPONSES]
    fake = copy.copy(CHAT)
    object.__setattr__(fake, "name", "toy")
    with pytest.raises(ValueError, match="no client on the toy wire"):
        conversation_for(fake)


def test_anthropic_results_are_appended_as_claude_code_does() -> None:
    talk = conversation_for(ANTHROPIC)
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi",
                                                        "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}
    received = received_anthropic()
    cache_breakpoint = talk.cache_breakpoint(body)
    assert cache_breakpoint == {"type": "ephemeral", "ttl": "1h"}
    nxt = talk.with_turn(body, talk.echo_assistant(received), talk.result_messages(
        ["toolu_1", "toolu_2"], [ToolOutcome("1\ta"), ToolOutcome("nope", True)]), cache_breakpoint)
    assert nxt["messages"][1]["content"] == received["content"]  # verbatim, signature included
    assert nxt["messages"][2]["content"] == [
        {"tool_use_id": "toolu_1", "type": "tool_result", "content": "1\ta"},
        {"type": "tool_result", "content": "nope", "is_error": True, "tool_use_id": "toolu_2",
         "cache_control": {"type": "ephemeral", "ttl": "1h"}}]  # the one breakpoint, moved to the last block
    assert "cache_control" not in nxt["messages"][0]["content"][0]
    assert len(body["messages"]) == 1 and "cache_control" in body["messages"][0]["content"][0]  # input unchanged
    ok = talk.result_messages(["toolu_3"], [ToolOutcome("done", explicit_ok=True)])
    assert ok[0]["content"] == [{"tool_use_id": "toolu_3", "type": "tool_result", "content": "done", "is_error": False}]


def test_a_request_without_a_marked_block_gets_no_breakpoint() -> None:
    talk = conversation_for(ANTHROPIC)
    body = {"messages": [{"role": "user", "content": "hi"}]}
    nxt = talk.with_turn(body, talk.echo_assistant(received_anthropic()),
                         talk.result_messages(["toolu_1", "toolu_2"], [ToolOutcome("a"), ToolOutcome("b")]),
                         talk.cache_breakpoint(body))
    assert all("cache_control" not in b for m in nxt["messages"][1:] for b in m["content"])


def test_openai_results_are_appended_as_opencode_does() -> None:
    talk = conversation_for(CHAT)
    received = {"role": "assistant", "content": None, "finish_reason": "tool_calls", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"/x/a\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"/x/b\"}"}},
    ]}
    assert talk.cache_breakpoint({"messages": []}) is None
    nxt = talk.with_turn({"messages": [{"role": "user", "content": "hi"}]}, talk.echo_assistant(received),
                         talk.result_messages(["call_1", "call_2"], [ToolOutcome("1\ta"), ToolOutcome("nope", True)]))
    assert nxt["messages"][1] == {"role": "assistant", "content": "", "tool_calls": received["tool_calls"]}
    assert nxt["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": "1\ta"}
    assert nxt["messages"][3] == {"role": "tool", "tool_call_id": "call_2", "content": "nope"}


def _codex_next(received: dict, tmp_path: Path) -> dict:
    talk = conversation_for(RESPONSES)
    body = build_first_request(find_template(RESPONSES, "/nonexistent"), "do it [task:x]", tmp_path, None)
    return talk.with_turn(body, talk.echo_assistant(received), talk.results_for(
        received, ["call_a", "call_b"], [ToolOutcome("Chunk ID: abc123\nOutput:\nx\n"), ToolOutcome("Exit code: 0\n")]))


def test_items_are_appended_as_codex_appends_them(tmp_path: Path) -> None:
    received = received_responses()
    tail = _codex_next(received, tmp_path)["input"][-5:]
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


def test_a_reasoning_item_without_content_goes_back_with_content_null(tmp_path: Path) -> None:
    received = received_responses()
    del received["output"][0]["content"]
    assert _codex_next(received, tmp_path)["input"][-5]["content"] is None  # as Codex 0.171.0 sent it back


def test_a_namespaced_call_goes_back_with_its_namespace_and_parts_as_its_output() -> None:
    talk = conversation_for(RESPONSES)
    msg = {"output": [{"id": "fc_9", "type": "function_call", "call_id": "c9", "name": "read_file",
                       "namespace": "mcp__files", "arguments": "{\"path\":\"a\"}", "status": "completed"}]}
    echoed = talk.echo_assistant(msg)
    assert list(echoed[0]) == ["type", "status", "id", "name", "namespace", "arguments", "call_id"]
    parts = [{"type": "input_text", "text": "Wall time: 0.0001 seconds\nOutput:"}, {"type": "input_text", "text": "x"}]
    items = talk.results_for(msg, ["c9"], [ToolOutcome("...", parts=parts)])
    assert items[0]["type"] == "function_call_output" and items[0]["output"] == parts


def test_the_files_server_is_attached_as_codex_attaches_it(tmp_path: Path) -> None:
    talk = conversation_for(RESPONSES)
    body = build_first_request(find_template(RESPONSES, "/nonexistent"), "read it [task:x]", tmp_path, None)
    attached = talk.with_mcp_server(body, "files")
    kinds = [(t["type"], t.get("name")) for t in attached["tools"]]
    assert ("namespace", "mcp__files") in kinds and ("namespace", "mcp__files") not in [
        (t["type"], t.get("name")) for t in body["tools"]]
    assert kinds.index(("namespace", "mcp__files")) < kinds.index(("web_search", None))
    assert "read_file" in RESPONSES.offered_tools(attached)
    assert talk.with_mcp_server(attached, "files") == attached  # once only
    with pytest.raises(ValueError, match="offers no MCP server tools"):
        conversation_for(CHAT).with_mcp_server({"messages": []}, "files")


def test_a_resumed_session_goes_before_the_new_prompt(tmp_path: Path) -> None:
    talk = conversation_for(RESPONSES)
    body = build_first_request(find_template(RESPONSES, "/nonexistent"), "continue [task:x]", tmp_path, None)
    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "earlier"}]},
               {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "ENC"}]
    resumed = talk.resumed(body, history)
    texts = [p.get("text") for i in resumed["input"] if i.get("role") == "user" for p in i["content"]]
    assert texts.index("earlier") < texts.index("continue [task:x]")
    assert talk.stored_history(resumed)[:2] == history
    with pytest.raises(ValueError, match="does not resume"):
        conversation_for(ANTHROPIC).resumed({"messages": []}, history)
