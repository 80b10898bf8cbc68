"""Every scenario, played to completion against the engine through the official SDKs.

For each scenario file and each wire (Anthropic Messages with Claude Code's tool shapes, OpenAI
chat and the Responses API with opencode's), a mini agent loop streams each turn with the SDK,
lets the SDK accumulate the message, runs the tool calls in a sandbox directory and finally checks
the scenario's completion rules on disk with freshly drawn random variables — so a canned reply
cannot pass.
"""

from __future__ import annotations

import json
import random

import anthropic
import jsonschema
import openai
import pytest

from conformance.core.paths import fixtures_dir
from conformance.engine.scenarios import fill_object
from conformance.wire.anthropic import grammar as anthropic_wire
from conformance.wire.chat import grammar as openai_wire

from .conftest import engine
from .helpers import (
    CLAUDE_TOOLS,
    OPENAI_TOOLS,
    RESPONSES_TOOLS,
    Sandbox,
    check_completion,
    post,
    seed_scenario,
)
from .test_faults import A_TEXT, A_TOOL, O_TEXT, O_TOOL, judge

SCENARIOS = sorted(p for p in (fixtures_dir() / "scenarios").glob("*.json") if not p.name.endswith(".schema.json"))


def _doc(path):
    return json.loads(path.read_text())


def test_scenario_files_valid_against_schema():
    schema = json.loads((fixtures_dir() / "scenarios" / "scenario.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    ids = set()
    for p in SCENARIOS:
        doc = _doc(p)
        jsonschema.Draft202012Validator(schema).validate(doc)
        assert doc["id"] == p.stem and doc["id"] not in ids
        assert f"[task:{doc['id']}]" in doc["prompt"]
        ids.add(doc["id"])
    assert {"write-file", "sum-numbers", "edit-file", "multi-step", "parallel-reads"} <= ids


def _wire_core_passes(url, api, body):
    """The same turn, sent raw, passes the wire core's stream checks."""
    path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"
    status, _, chunks = post(url, path, body)
    report = (anthropic_wire if api == "anthropic" else openai_wire).check_stream(chunks, request=body)
    errors = [str(v) for v in report.violations if v.severity == "error"]
    assert status == 200 and report.complete and not errors, errors


def _loop_anthropic(url, doc, root):
    client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)
    system = [{"type": "text", "text": "You are a coding agent. x-salt-8841", "cache_control": {"type": "ephemeral"}},
              {"type": "text", "text": f"# Environment\n - Primary working directory: {root}\n"}]
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nAs you answer, use the tools.\n</system-reminder>"},
        {"type": "text", "text": doc["prompt"], "cache_control": {"type": "ephemeral"}}]}]
    sandbox = Sandbox(root, "claude")
    shapes = []
    for turn in range(doc.get("max_turns", 8)):
        _wire_core_passes(url, "anthropic", {
            "model": "claude-sonnet-x", "max_tokens": 32000, "system": system, "messages": messages,
            "tools": CLAUDE_TOOLS, "thinking": {"type": "adaptive"}, "stream": True})
        with client.messages.stream(
            model="claude-sonnet-x", max_tokens=32000, system=system, messages=messages, tools=CLAUDE_TOOLS,
            thinking={"type": "adaptive"}, metadata={"user_id": "user_abc_session_1"},
            extra_body={"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
                        "output_config": {"effort": "xhigh"}},
            extra_query={"beta": "true"},
            extra_headers={"anthropic-beta": "context-management-2025-06-27,interleaved-thinking-2025-05-14"},
        ) as stream:
            msg = stream.get_final_message()
        assert msg.model == "claude-sonnet-x"
        assert msg.content[0].type == "thinking" and msg.content[0].signature
        calls = [b for b in msg.content if b.type == "tool_use"]
        shapes.append(len(calls))
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]})
        if msg.stop_reason == "end_turn":
            assert not calls
            return shapes
        assert msg.stop_reason == "tool_use" and calls
        results = [{"type": "tool_result", "tool_use_id": c.id, "content": sandbox.run(c.name, c.input)} for c in calls]
        messages.append({"role": "user", "content": results})
        if turn == 0:  # Claude Code's mid-conversation system entry
            messages.append({"role": "system", "content": "Mid-conversation note from the harness."})
    raise AssertionError(f"no end_turn within {doc.get('max_turns', 8)} turns")


def _loop_openai(url, doc, root):
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    messages = [{"role": "system", "content": f"You are opencode.\n<env>\n  Working directory: {root}\n</env>"},
                {"role": "user", "content": f'"{doc["prompt"]}"'}]  # opencode wraps it in literal quotes
    sandbox = Sandbox(root, "opencode")
    shapes = []
    for _ in range(doc.get("max_turns", 8)):
        _wire_core_passes(url, "openai", {"model": "local/m", "messages": messages, "tools": OPENAI_TOOLS,
                                          "stream": True, "stream_options": {"include_usage": True}})
        with client.chat.completions.stream(model="local/m", messages=messages, tools=OPENAI_TOOLS,
                                            tool_choice="auto", max_tokens=32000,
                                            stream_options={"include_usage": True}) as stream:
            done = stream.get_final_completion()
        assert done.usage is not None and done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
        choice = done.choices[0]
        calls = choice.message.tool_calls or []
        shapes.append(len(calls))
        messages.append({"role": "assistant", "content": choice.message.content,
                         "tool_calls": [{"id": c.id, "type": "function",
                                         "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                        for c in calls] or None})
        if choice.finish_reason == "stop":
            assert not calls
            return shapes
        assert choice.finish_reason == "tool_calls" and calls
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c.id,
                             "content": sandbox.run(c.function.name, json.loads(c.function.arguments))})
    raise AssertionError("no stop within max_turns")


# An attached MCP server's tools reach the model inside a namespace (Codex offers them so), which
# only the Responses wire has: a scenario with `mcp_server` is played on that wire alone.
MCP_NAMESPACES = {"files": {"type": "namespace", "name": "mcp__files", "description": "files MCP server",
                            "tools": [{"type": "function", "name": "read_file", "strict": False,
                                       "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                      "required": ["path"]}}]}}


def _loop_responses(url, doc, root):
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    items = [{"role": "user", "content": [{"type": "input_text", "text": doc["prompt"]}]}]
    sandbox = Sandbox(root, "opencode")
    shapes = []
    tools = RESPONSES_TOOLS + ([MCP_NAMESPACES[doc["mcp_server"]]] if doc.get("mcp_server") else [])
    for _ in range(doc.get("max_turns", 8)):
        with client.responses.stream(model="m", instructions=f"Working directory: {root}", input=items,
                                     tools=tools, max_output_tokens=32000) as stream:
            resp = stream.get_final_response()
        assert resp.status == "completed"
        calls = [o for o in resp.output if o.type == "function_call"]
        shapes.append(len(calls))
        for o in resp.output:
            if o.type == "function_call":
                items.append({"type": "function_call", "call_id": o.call_id, "name": o.name, "arguments": o.arguments})
            elif o.type == "message":
                items.append({"role": "assistant", "content": o.content[0].text})
        if not calls:
            return shapes
        for c in calls:
            name = "read" if getattr(c, "namespace", None) == "mcp__files" and c.name == "read_file" else c.name
            items.append({"type": "function_call_output", "call_id": c.call_id,
                          "output": sandbox.run(name, json.loads(c.arguments))})
    raise AssertionError("no final answer within max_turns")


LOOPS = {"anthropic": _loop_anthropic, "openai-chat": _loop_openai, "responses": _loop_responses}


@pytest.mark.parametrize(("path", "wire"), [
    pytest.param(p, w, id=f"{p.stem}-{w}") for p in SCENARIOS for w in sorted(LOOPS)
    if w == "responses" or not _doc(p).get("mcp_server")])
def test_scenario_completes_through_sdk(engine_url, tmp_path, path, wire):
    doc = _doc(path)
    root = tmp_path / "project"
    root.mkdir()
    variables = seed_scenario(doc, root, random.Random(f"{doc['id']}-{wire}-{tmp_path.name}"))
    shapes = LOOPS[wire](engine_url, doc, root)
    check_completion(doc, root, variables)
    expected = [len(t["tool_calls"]) if "tool_calls" in t else 0 for t in doc["script"]]
    assert shapes == expected


def test_canned_second_turn_fails(engine_url, tmp_path):
    """The answer follows the tool result's content: two different seeds give two different sums."""
    client = anthropic.Anthropic(base_url=engine_url, api_key="sk-test", max_retries=0)
    prompt = "Read the file numbers.txt, add up all the integers, write the sum to sum.txt. [task:sum-numbers]"
    sums = []
    for content in ("     1→100\n     2→23", "     1→7\n     2→8\n     3→9"):
        msgs = [{"role": "user", "content": prompt},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                   "input": {"file_path": "numbers.txt"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}]}]
        m = client.messages.create(model="m", max_tokens=1000, messages=msgs, tools=CLAUDE_TOOLS)
        sums.append(m.content[-1].input["content"].strip())
    assert sums == ["123", "24"]


def test_title_request_without_tools_gets_text(engine_url):
    """opencode's title request repeats the task but offers no tools: the engine answers in text."""
    client = openai.OpenAI(base_url=engine_url + "/v1", api_key="x", max_retries=0)
    r = client.chat.completions.create(model="m", messages=[
        {"role": "system", "content": "You are a title generator."},
        {"role": "user", "content": "Generate a title for this conversation:"},
        {"role": "user", "content": '"Read the file numbers.txt ... [task:sum-numbers]"'}])
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.content


@pytest.mark.parametrize("api,path,choice,want", [
    # a named tool other than the one the scenario turn calls (write-static calls Write)
    ("anthropic", "/v1/messages", {"type": "tool", "name": "Read"}, "Read"),
    ("openai", "/v1/chat/completions", {"type": "function", "function": {"name": "read"}}, "read"),
    # a forced choice on a request no scenario plans a call for
    ("anthropic", "/v1/messages", {"type": "any"}, None),
    ("openai", "/v1/chat/completions", "required", None),
])
def test_the_conformant_engine_honours_a_forced_choice_over_the_scenario(api, path, choice, want):
    """The reference engine is conformant: tools.choice_honoured passes whatever the scenario
    would have played (found when the check was added: a named choice got the scenario's call)."""
    if want is None:
        body = dict(A_TEXT, tools=CLAUDE_TOOLS) if api == "anthropic" else dict(O_TEXT, tools=OPENAI_TOOLS)
    else:
        body = A_TOOL if api == "anthropic" else O_TOOL
    body = dict(body, tool_choice=choice)
    with engine() as url:
        verdict = judge(url, path, body, api)
    assert verdict.outcomes.get("tools.choice_honoured") == "passed", [str(v) for v in verdict.violations]
    assert not verdict.errors, [str(v) for v in verdict.errors]
    if want is not None:
        assert [c.name for c in verdict.wire.tool_calls(verdict.message)] == [want]


def test_forced_arguments_fill_arrays_to_min_items_and_fit_the_schema():
    """A forced call of a tool whose required array has minItems (Claude Code's AskUserQuestion
    `options`) sends as many items as the schema asks for, each filled by its own schema."""
    item = {"type": "object", "properties": {"label": {"type": "string", "minLength": 1},
                                             "n": {"type": "integer", "minimum": 2}}, "required": ["label", "n"]}
    schema = {"type": "object", "required": ["options", "tags", "pair"], "properties": {
        "options": {"type": "array", "minItems": 2, "items": item},
        "tags": {"type": "array", "minItems": 3, "uniqueItems": True, "items": {"type": "string"}},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "boolean"}], "items": False}}}
    args = fill_object(schema)
    jsonschema.Draft202012Validator(schema).validate(args)
    assert len(args["options"]) == 2 and args["pair"] == [0, False]
