"""The reference engine on /v1/responses plays Codex's tools, judged here by the stream grammar
itself (this file's own small reader, independent of the judge) and by the official SDK.

Bodies come from the committed Codex corpus (captured/codex/): the engine answers the requests a
real Codex sent, and the replayed requests hand it reasoning `encrypted_content` minted by an
earlier engine process, `function_call_output` and `custom_tool_call_output` items."""

from __future__ import annotations

import copy
import json

import openai
import pytest

from conformance.capture.format import load_capture
from conformance.core.paths import captured_dir

from .conftest import engine
from .helpers import post, sse_events

CODEX = captured_dir() / "codex" / "0.171.0"


def codex_bodies(case: str) -> list[dict]:
    cap = load_capture(CODEX / f"{case}.json")
    return [copy.deepcopy(ex.request.body) for ex in cap.main_exchanges()]


def events_of(chunks: list[bytes]) -> list[dict]:
    return [json.loads(data) for _, data in sse_events(b"".join(chunks))]


def grammar_errors(events: list[dict]) -> list[str]:
    """What is wrong with one Responses stream, by the rules of the streaming-events reference."""
    errs = []
    types = [e["type"] for e in events]
    if [e.get("sequence_number") for e in events] != list(range(len(events))):
        errs.append("sequence_number is not 0, 1, 2, ...")
    if types[:2] != ["response.created", "response.in_progress"]:
        errs.append(f"starts with {types[:2]}")
    terminals = [t for t in types if t in ("response.completed", "response.incomplete", "response.failed")]
    if terminals != [types[-1]]:
        errs.append(f"terminal events {terminals}, last event {types[-1]}")
    added, done, deltas, done_text = {}, [], {}, {}
    for e in events:
        t = e["type"]
        if t == "response.output_item.added":
            if e["output_index"] != len(added):
                errs.append(f"output_index {e['output_index']} after {len(added)} items")
            added[e["item"]["id"]] = e["output_index"]
        elif t == "response.output_item.done":
            done.append(e["item"])
        elif t.endswith(".delta"):
            if e["item_id"] not in added or any(d["id"] == e["item_id"] for d in done):
                errs.append(f"{t} for item {e['item_id']} not open")
            key = (e["item_id"], t[:-len(".delta")], e.get("content_index", e.get("summary_index")))
            deltas[key] = deltas.get(key, "") + e["delta"]
        elif t.endswith(".done") and t != "response.output_item.done":
            text = e.get("text", e.get("arguments", e.get("input")))
            if isinstance(text, str):
                done_text[(e["item_id"], t[:-len(".done")], e.get("content_index", e.get("summary_index")))] = text
    for key, text in done_text.items():
        if deltas.get(key, "") != text:
            errs.append(f"{key}: done text {text!r} != deltas {deltas.get(key, '')!r}")
    final = events[-1].get("response") or {}
    if final.get("output") != done:
        errs.append("final response.output differs from the output_item.done items")
    usage = final.get("usage") or {}
    if usage.get("total_tokens") != usage.get("input_tokens", 0) + usage.get("output_tokens", 0):
        errs.append(f"usage inconsistent: {usage}")
    return errs


def stream(url: str, body: dict) -> list[dict]:
    status, _, chunks = post(url, "/v1/responses", dict(body, stream=True))
    assert status == 200, b"".join(chunks)[:500]
    events = events_of(chunks)
    assert grammar_errors(events) == []
    return events


def final_output(events: list[dict]) -> list[dict]:
    return events[-1]["response"]["output"]


def test_plain_codex_request_gets_reasoning_with_encrypted_content_and_text(engine_url):
    (body,) = codex_bodies("plain")
    assert any(t.get("type") == "web_search" for t in body["tools"])  # the hosted tool is ignored, no 400
    out = final_output(stream(engine_url, body))
    assert [i["type"] for i in out] == ["reasoning", "message"]
    reasoning = out[0]
    assert reasoning["summary"][0]["type"] == "summary_text" and reasoning["summary"][0]["text"]
    assert isinstance(reasoning["encrypted_content"], str) and reasoning["encrypted_content"]


def test_no_encrypted_content_unless_included(engine_url):
    (body,) = codex_bodies("plain")
    body.pop("include")
    reasoning = final_output(stream(engine_url, body))[0]
    assert reasoning["type"] == "reasoning" and "encrypted_content" not in reasoning


def test_exec_command_call_has_codex_arguments(engine_url):
    first = codex_bodies("exec-loop")[0]
    out = final_output(stream(engine_url, first))
    (call,) = [i for i in out if i["type"] == "function_call"]
    assert call["name"] == "exec_command" and json.loads(call["arguments"]) == {"cmd": "cat token.txt"}
    assert "namespace" not in call


def test_replayed_turns_accept_foreign_reasoning_and_call_outputs(engine_url):
    bodies = codex_bodies("multi-turn-reasoning")
    later = bodies[1:]
    kinds = {i.get("type") for b in later for i in b["input"]}
    assert {"reasoning", "function_call", "function_call_output"} <= kinds
    assert any(i.get("encrypted_content") for b in later for i in b["input"] if i.get("type") == "reasoning")
    out = final_output(stream(engine_url, later[0]))
    (patch,) = [i for i in out if i["type"] == "custom_tool_call"]
    assert patch["name"] == "apply_patch"
    assert patch["input"] == "*** Begin Patch\n*** Add File: sum.txt\n+2121\n*** End Patch\n"
    last = final_output(stream(engine_url, later[1]))
    assert [i["type"] for i in last][-1] == "message" and "2121" in last[-1]["content"][0]["text"]


def test_apply_patch_is_a_freeform_custom_tool_call(engine_url):
    second = codex_bodies("apply-patch-loop")[1]
    assert any(t.get("type") == "custom" and t["name"] == "apply_patch" for t in second["tools"])
    events = stream(engine_url, second)
    (patch,) = [i for i in final_output(events) if i["type"] == "custom_tool_call"]
    assert patch["input"].startswith("*** Begin Patch\n*** Update File: settings.conf\n")
    assert patch["input"].endswith("-mode=draft\n+mode=final\n*** End Patch\n")
    types = [e["type"] for e in events]
    assert "response.custom_tool_call_input.delta" in types and "response.function_call_arguments.delta" not in types


def test_custom_tool_call_output_is_accepted(engine_url):
    third = codex_bodies("apply-patch-loop")[2]
    assert any(i.get("type") == "custom_tool_call_output" for i in third["input"])
    out = final_output(stream(engine_url, third))
    assert out[-1]["type"] == "message" and "mode=final" in out[-1]["content"][0]["text"]


def test_function_form_apply_patch_gets_json_input(engine_url):
    body = codex_bodies("apply-patch-loop")[1]
    body["tools"] = [t if t.get("name") != "apply_patch" else
                     {"type": "function", "name": "apply_patch", "strict": False,
                      "parameters": {"type": "object", "properties": {"input": {"type": "string"}},
                                     "required": ["input"]}} for t in body["tools"]]
    (call,) = [i for i in final_output(stream(engine_url, body)) if i["type"] == "function_call"]
    assert call["name"] == "apply_patch" and json.loads(call["arguments"])["input"].startswith("*** Begin Patch")


def test_namespaced_tool_call_keeps_name_and_namespace(engine_url):
    (body,) = codex_bodies("plain")
    body["tool_choice"] = {"type": "function", "name": "wait_agent"}
    (call,) = [i for i in final_output(stream(engine_url, body)) if i["type"] == "function_call"]
    assert call["name"] == "wait_agent" and call["namespace"] == "multi_agent_v1"


@pytest.mark.parametrize("case", ["plain", "exec-loop", "apply-patch-loop", "multi-turn-reasoning", "namespace-call",
                                  "no-web-search"])
def test_codex_corpus_through_the_sdk_non_stream(engine_url, case):
    client = openai.OpenAI(base_url=engine_url + "/v1", api_key="sk-test", max_retries=0)
    for body in codex_bodies(case):
        rest = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
        resp = client.responses.create(model=body["model"], input=body["input"], stream=False, extra_body=rest)
        assert resp.status == "completed" and resp.output
        assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens


def test_stream_and_non_stream_agree(engine_url):
    body = codex_bodies("apply-patch-loop")[1]
    streamed = final_output(stream(engine_url, body))
    status, _, chunks = post(engine_url, "/v1/responses", dict(body, stream=False))

    def without_ids(items):  # ids come from the body's digest, and `stream` is part of the body
        return [{k: v for k, v in i.items() if k not in ("id", "call_id")} for i in items]

    assert status == 200 and without_ids(json.loads(b"".join(chunks))["output"]) == without_ids(streamed)


def test_a_forced_freeform_call_said_in_words_under_tool_choice_ignored():
    body = codex_bodies("apply-patch-loop")[1]
    body["tool_choice"] = "required"
    with engine("tool-choice-ignored") as url:
        out = final_output(stream(url, body))
    assert [i["type"] for i in out] == ["reasoning", "message"]
    assert "use the apply_patch tool on settings.conf" in out[-1]["content"][0]["text"]
    assert "*** Begin Patch" not in out[-1]["content"][0]["text"]
