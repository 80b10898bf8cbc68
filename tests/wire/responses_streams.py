"""Hand-built OpenAI Responses API streams for the wire tests: valid shapes the reference engine
does not produce (reasoning summaries with encrypted_content, custom tool calls, namespaced calls,
refusals, hosted tool items, unknown events), as event lists that mutations can edit.

Shapes follow the OpenAI API reference "Streaming events" and the openai SDK's
`types/responses/*_event.py`; the Codex items follow its measured request (docs/wire-facts.md).
"""

from __future__ import annotations

import copy
import json
from typing import Any

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"


def _response(rid: str, status: str, output: list, usage: dict | None, **extra) -> dict:
    out = {"id": rid, "object": "response", "created_at": 1764633600, "status": status, "error": None,
           "incomplete_details": None, "model": "conformance-model", "output": output, "usage": usage,
           "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "store": False}
    out.update(extra)
    return out


def _pieces(text: str, n: int = 3) -> list[str]:
    if not text:
        return []
    step = max(1, len(text) // n)
    return [text[i:i + step] for i in range(0, len(text), step)]


def item_events(oi: int, item: dict) -> list[dict]:
    """The events that stream one finished output item (without sequence numbers)."""
    iid, kind = item["id"], item["type"]
    evs: list[dict] = []
    if kind == "message":
        evs.append({"type": "response.output_item.added", "output_index": oi,
                    "item": {**item, "status": "in_progress", "content": []}})
        for ci, part in enumerate(item["content"]):
            key = "refusal" if part["type"] == "refusal" else "text"
            name = "refusal" if key == "refusal" else "output_text"
            evs.append({"type": "response.content_part.added", "item_id": iid, "output_index": oi,
                        "content_index": ci, "part": {**part, key: ""}})
            for piece in _pieces(part[key]):
                ev = {"type": f"response.{name}.delta", "item_id": iid, "output_index": oi, "content_index": ci,
                      "delta": piece}
                if name == "output_text":
                    ev["logprobs"] = []
                evs.append(ev)
            done = {"type": f"response.{name}.done", "item_id": iid, "output_index": oi, "content_index": ci,
                    key: part[key]}
            evs.append(done)
            evs.append({"type": "response.content_part.done", "item_id": iid, "output_index": oi,
                        "content_index": ci, "part": part})
    elif kind == "reasoning":
        evs.append({"type": "response.output_item.added", "output_index": oi,
                    "item": {**item, "summary": [], **({"content": []} if "content" in item else {})}})
        for si, part in enumerate(item["summary"]):
            evs.append({"type": "response.reasoning_summary_part.added", "item_id": iid, "output_index": oi,
                        "summary_index": si, "part": {"type": "summary_text", "text": ""}})
            for piece in _pieces(part["text"]):
                evs.append({"type": "response.reasoning_summary_text.delta", "item_id": iid, "output_index": oi,
                            "summary_index": si, "delta": piece})
            evs.append({"type": "response.reasoning_summary_text.done", "item_id": iid, "output_index": oi,
                        "summary_index": si, "text": part["text"]})
            evs.append({"type": "response.reasoning_summary_part.done", "item_id": iid, "output_index": oi,
                        "summary_index": si, "part": part})
        for ci, part in enumerate(item.get("content") or []):
            evs.append({"type": "response.content_part.added", "item_id": iid, "output_index": oi,
                        "content_index": ci, "part": {**part, "text": ""}})
            for piece in _pieces(part["text"]):
                evs.append({"type": "response.reasoning_text.delta", "item_id": iid, "output_index": oi,
                            "content_index": ci, "delta": piece})
            evs.append({"type": "response.reasoning_text.done", "item_id": iid, "output_index": oi,
                        "content_index": ci, "text": part["text"]})
            evs.append({"type": "response.content_part.done", "item_id": iid, "output_index": oi,
                        "content_index": ci, "part": part})
    elif kind in ("function_call", "custom_tool_call"):
        key, name = ("arguments", "function_call_arguments") if kind == "function_call" else \
            ("input", "custom_tool_call_input")
        evs.append({"type": "response.output_item.added", "output_index": oi,
                    "item": {**item, key: "", "status": "in_progress"}})
        for piece in _pieces(item[key]):
            evs.append({"type": f"response.{name}.delta", "item_id": iid, "output_index": oi, "delta": piece})
        evs.append({"type": f"response.{name}.done", "item_id": iid, "output_index": oi, key: item[key]})
    elif kind == "web_search_call":
        evs.append({"type": "response.output_item.added", "output_index": oi,
                    "item": {**item, "status": "in_progress"}})
        for step in ("in_progress", "searching", "completed"):
            evs.append({"type": f"response.web_search_call.{step}", "item_id": iid, "output_index": oi})
    evs.append({"type": "response.output_item.done", "output_index": oi, "item": item})
    return evs


def stream_events(items: list[dict], *, status: str = "completed", rid: str = "resp_fixture0001",
                  usage: dict | None = None, reason: str | None = None) -> list[dict]:
    usage = usage if usage is not None else {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 0},
                                             "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 4},
                                             "total_tokens": 52}
    evs = [{"type": "response.created", "response": _response(rid, "in_progress", [], None)},
           {"type": "response.in_progress", "response": _response(rid, "in_progress", [], None)}]
    for oi, item in enumerate(items):
        evs += item_events(oi, item)
    final = _response(rid, status, copy.deepcopy(items), usage if status != "failed" else None)
    if status == "incomplete":
        final["incomplete_details"] = {"reason": reason or "max_output_tokens"}
    if status == "failed":
        final["error"] = {"code": "server_error", "message": "the engine failed"}
    evs.append({"type": f"response.{status}", "response": final})
    return evs


def encode(events: list[dict], *, numbered: bool = True, start: int = 0) -> bytes:
    """SSE bytes: `event: TYPE` and `data: JSON` per event, sequence numbers from `start`."""
    out = []
    for n, ev in enumerate(events):
        ev = dict(ev)
        if numbered and "sequence_number" not in ev:
            ev = {"type": ev["type"], "sequence_number": start + n, **{k: v for k, v in ev.items() if k != "type"}}
        out.append(f"event: {ev['type']}\ndata: {json.dumps(ev, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


def message(text: str, iid: str = "msg_fixture0001") -> dict:
    return {"id": iid, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}


def reasoning(summary: str, iid: str = "rs_fixture0001", *, text: str | None = None) -> dict:
    item: dict[str, Any] = {"id": iid, "type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                            "encrypted_content": "gAAAAB-opaque-fixture-blob=="}
    if text is not None:
        item["content"] = [{"type": "reasoning_text", "text": text}]
    return item


def function_call(name: str, arguments: str, iid: str = "fc_fixture0001", *, namespace: str | None = None) -> dict:
    item = {"id": iid, "type": "function_call", "status": "completed", "call_id": "call_" + iid[3:], "name": name,
            "arguments": arguments}
    if namespace:
        item["namespace"] = namespace
    return item


def custom_call(name: str, text: str, iid: str = "ctc_fixture0001") -> dict:
    return {"id": iid, "type": "custom_tool_call", "status": "completed", "call_id": "call_" + iid[4:], "name": name,
            "input": text}


# name -> (events, request): every valid hand-built stream
def valid_streams() -> dict[str, tuple[list[dict], dict]]:
    req = {"model": "conformance-model", "stream": True, "input": "hi"}
    refusal = {"id": "msg_refusal01", "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    extra = stream_events([message("Hello there, friend.")])
    extra.insert(2, {"type": "response.vendor_extension.progress", "note": "tolerated"})
    extra[3]["vendor_field"] = {"anything": True}
    return {
        "text": (stream_events([message("Hello there, friend.")]), req),
        "reasoning-then-exec": (stream_events([
            reasoning("Listing the files first."),
            function_call("exec_command", json.dumps({"cmd": "ls -la"}))]), req),
        "reasoning-text-open-model": (stream_events([reasoning("", text="The user wants a greeting."),
                                                     message("Hi!")]), req),
        "apply-patch-freeform": (stream_events([custom_call("apply_patch", PATCH)]), req),
        "namespaced-call": (stream_events([function_call("spawn_agent", json.dumps({"task": "x"}),
                                                         namespace="multi_agent_v1")]), req),
        "two-parallel-calls": (stream_events([
            function_call("exec_command", json.dumps({"cmd": "pwd"}), "fc_fixture0001"),
            function_call("exec_command", json.dumps({"cmd": "ls"}), "fc_fixture0002")]), req),
        "incomplete-cap": (stream_events([message("Once upon a")], status="incomplete",
                                         usage={"input_tokens": 10, "output_tokens": 4, "total_tokens": 14}),
                           dict(req, max_output_tokens=4)),
        "refusal": (stream_events([refusal]), req),
        "hosted-web-search": (stream_events([
            {"id": "ws_fixture0001", "type": "web_search_call", "status": "completed",
             "action": {"type": "search", "query": "weather"}},
            message("It is sunny.")]), req),
        "unknown-events-and-fields": (extra, req),
        "sequence-from-one": (stream_events([message("Numbered from one.")]), req),
    }
