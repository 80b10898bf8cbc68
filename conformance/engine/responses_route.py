"""POST /v1/responses: the OpenAI Responses API, stream and non-stream (Codex CLI's only wire to a
custom provider; LiteLLM's default upstream path for Anthropic requests to `openai/` models).

Rules (OpenAI Responses API reference, "Streaming events"; event payload fields as in the openai
Python SDK's `types/responses/*_event.py`; Codex's items as in openai/codex `ResponseItem`):
- Input: a string, or a list of items — messages ({role, content: str | [input_text|output_text
  parts]}), `function_call`, `function_call_output`, `custom_tool_call`, `custom_tool_call_output`,
  `reasoning`. Consecutive assistant-side items (assistant message, calls, reasoning) form one
  assistant turn. An output item whose call_id matches no earlier call is a 400.
  `previous_response_id` is refused (nothing is stored: send the whole conversation).
- Stateless: a reasoning item's `encrypted_content` is opaque and never checked — the engine takes
  reasoning it did not mint (a replayed capture, another deployment's) like its own.
- Tools: `function` (JSON arguments), `custom` (freeform: a raw string `input`, e.g. Codex's
  `apply_patch`), `namespace` (its inner tools are callable; a call keeps `name` and `namespace`
  apart). Hosted tools the engine does not run (`web_search`, `file_search`, ...) are ignored.
- `reasoning.effort` takes the same values as the chat route (vLLM's ladder). Reasoning is produced
  when an effort other than none is asked, or a `reasoning.summary` (Codex sends `summary: auto`):
  as a summary part when a summary is asked, else as `reasoning_text` content (open models). With
  `include: ["reasoning.encrypted_content"]` the finished reasoning item carries an opaque
  `encrypted_content`.
- Stream grammar, every event with `type` and a `sequence_number` from 0 up by 1:
  response.created, response.in_progress, then per output item (output_index from 0):
  response.output_item.added, then
  message / reasoning content: [response.content_part.added, response.output_text.delta* |
  response.reasoning_text.delta*, *.done, response.content_part.done];
  reasoning summary: [response.reasoning_summary_part.added, response.reasoning_summary_text.delta*,
  .done, response.reasoning_summary_part.done];
  function_call: [response.function_call_arguments.delta*, .done];
  custom_tool_call: [response.custom_tool_call_input.delta*, .done];
  then response.output_item.done; finally response.completed (or response.incomplete with
  incomplete_details.reason max_output_tokens) whose `output` is the finished items. Every `.done`
  text equals its deltas. No `[DONE]` sentinel.
- Errors use the OpenAI shape of the chat route.
- Faults acted on here (conformance/engine/faults.py): responses-missing, hosted-tool-rejected,
  multi-turn-items-rejected, foreign-reasoning-rejected, custom-tool-as-function,
  custom-tool-dropped, namespace-flattened, terminal-event-missing, sequence-number-gap,
  done-text-mismatch (and the shared stream-truncated, buffered-stream, usage-inconsistent).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets

from aiohttp import web

from conformance.engine import ids, tokenizer, wire
from conformance.engine.conversation import (
    Conversation,
    InvalidRequest,
    Message,
    Tool,
    ToolCall,
    ToolResult,
    block_text,
    compact_json,
    is_int,
    require,
)
from conformance.engine.faults import (
    BUFFERED_STREAM,
    CUSTOM_TOOL_AS_FUNCTION,
    CUSTOM_TOOL_DROPPED,
    DONE_TEXT_MISMATCH,
    FOREIGN_REASONING_REJECTED,
    HOSTED_TOOL_REJECTED,
    MULTI_TURN_ITEMS_REJECTED,
    NAMESPACE_FLATTENED,
    RESPONSES_MISSING,
    SEQUENCE_NUMBER_GAP,
    STREAM_TRUNCATED,
    TERMINAL_EVENT_MISSING,
    USAGE_INCONSISTENT,
)
from conformance.engine.openai_route import effort_check, plan_answer
from conformance.engine.wire import ClientGone, SSEWriter, split_json, split_text, start_sse

CALLABLE_TOOL_TYPES = ("function", "custom", "namespace")
SUMMARY_MODES = ("auto", "concise", "detailed")
ENCRYPTED_INCLUDE = "reasoning.encrypted_content"
_REASONING_MARK = b"\x01ref-eng-rs"
# `foreign-reasoning-rejected`: this process's own key, so reasoning minted by any other engine run
# (a replayed capture) is foreign; the conformant engine mints with a fixed key and checks nothing.
_FIXED_KEY = b"conformance-reference-engine-reasoning"
_INSTANCE_KEY = secrets.token_bytes(32)


def encrypted_reasoning(text: str, faults) -> str:
    """Opaque `encrypted_content` for a reasoning item: a mark and a MAC of the text, base64."""
    key = _INSTANCE_KEY if FOREIGN_REASONING_REJECTED in faults else _FIXED_KEY
    mac = hmac.new(key, text.encode(), hashlib.sha256).digest()
    return base64.b64encode(_REASONING_MARK + mac + text.encode()).decode()


def _minted_here(blob: str) -> bool:
    try:
        raw = base64.b64decode(blob, validate=True)
    except ValueError:
        return False
    mark, mac, text = raw[:len(_REASONING_MARK)], raw[len(_REASONING_MARK):len(_REASONING_MARK) + 32], \
        raw[len(_REASONING_MARK) + 32:]
    return mark == _REASONING_MARK and hmac.compare_digest(mac, hmac.new(_INSTANCE_KEY, text, hashlib.sha256).digest())


def _parse_tool(i: int, t: dict, namespace: str | None, faults) -> list[Tool]:
    require(isinstance(t, dict) and isinstance(t.get("type"), str), f"tools.{i}: Input should be a tool object",
            param="tools")
    typ = t["type"]
    if typ not in CALLABLE_TOOL_TYPES:
        if HOSTED_TOOL_REJECTED in faults:
            raise InvalidRequest(f"tools.{i}.type: tool type {typ!r} is not supported; supported types are "
                                 "function", param="tools")
        return []  # a hosted tool the engine does not run: ignored, as the model would never call it
    require(isinstance(t.get("name"), str) and t["name"] != "", f"tools.{i}.name: Field required", param="tools")
    description = t.get("description") if isinstance(t.get("description"), str) else ""
    if typ == "namespace":
        require(namespace is None, f"tools.{i}: a namespace cannot hold another namespace", param="tools")
        inner = t.get("tools")
        require(isinstance(inner, list), f"tools.{i}.tools: Input should be a list of tools", param="tools")
        out = []
        for k, sub in enumerate(inner):
            out += _parse_tool(k, sub, t["name"], faults)
        return out
    if typ == "custom":
        return [Tool(t["name"], {}, description, kind="custom", namespace=namespace)]
    params = t.get("parameters") or {"type": "object", "properties": {}}
    require(isinstance(params, dict), f"tools.{i}.parameters: Input should be an object", param="tools")
    return [Tool(t["name"], params, description, namespace=namespace)]


def parse(body: dict, faults) -> Conversation:
    if body.get("previous_response_id") is not None:
        raise InvalidRequest("previous_response_id is not supported: the reference engine stores no responses; "
                             "send the whole conversation in `input`", param="previous_response_id")
    model = body.get("model")
    require(model is None or isinstance(model, str), "model: Input should be a valid string", param="model")
    mt = body.get("max_output_tokens")
    require(mt is None or (is_int(mt) and mt >= 1), "max_output_tokens: Input should be an integer >= 1",
            param="max_output_tokens")
    stream = body.get("stream", False)
    require(stream is None or isinstance(stream, bool), "stream: Input should be a valid boolean", param="stream")
    reasoning = body.get("reasoning")
    effort = summary = None
    if reasoning is not None:
        require(isinstance(reasoning, dict), "reasoning: Input should be an object", param="reasoning")
        effort = reasoning.get("effort")
        effort_check(effort, faults, "reasoning.effort")
        summary = reasoning.get("summary")
        require(summary is None or summary in SUMMARY_MODES,
                f"reasoning.summary: Input should be one of {', '.join(SUMMARY_MODES)}", param="reasoning")
    raw_tools = body.get("tools") or []
    require(isinstance(raw_tools, list), "tools: Input should be a list", param="tools")
    tools: list[Tool] = []
    for i, t in enumerate(raw_tools):
        tools += _parse_tool(i, t, None, faults)
    tc = body.get("tool_choice", "auto")
    choice, name = "auto", None
    if isinstance(tc, str):
        require(tc in ("none", "auto", "required"), "tool_choice: Input should be 'none', 'auto' or 'required'",
                param="tool_choice")
        choice = {"none": "none", "auto": "auto", "required": "any"}[tc]
    elif isinstance(tc, dict) and tc.get("type") in ("function", "custom"):
        require(isinstance(tc.get("name"), str), "tool_choice.name: Field required", param="tool_choice")
        choice, name = "tool", tc["name"]
    system = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    more_system, messages = _parse_input(body.get("input"), faults)
    thinking = effort != "none" and (effort is not None or summary is not None)
    return Conversation(api="responses", model=model or "", system=system + more_system, messages=messages,
                        tools=tools, tool_choice=choice, tool_choice_name=name, max_tokens=mt,
                        thinking=thinking, stream=bool(stream),
                        parallel_tools=body.get("parallel_tool_calls") is not False)


def _parse_input(inp, faults):
    require(inp is not None, "input: Field required", param="input")
    if isinstance(inp, str):
        return [], [Message("user", texts=[inp])]
    require(isinstance(inp, list) and inp, "input: Input should be a string or a non-empty list of items",
            param="input")
    system: list[str] = []
    out: list[Message] = []
    seen: set[str] = set()

    def assistant() -> Message:
        if out and out[-1].role == "assistant":
            return out[-1]
        out.append(Message("assistant"))
        return out[-1]

    for i, item in enumerate(inp):
        where = f"input.{i}"
        require(isinstance(item, dict), f"{where}: Input should be an object", param="input")
        typ = item.get("type", "message")
        if MULTI_TURN_ITEMS_REJECTED in faults and typ in (
                "function_call_output", "custom_tool_call_output", "reasoning"):
            raise InvalidRequest(f"{where}: input item type {typ!r} is not supported; only message items "
                                 "are accepted", param="input")
        if typ == "message":
            role = item.get("role")
            require(role in ("user", "assistant", "system", "developer"),
                    f"{where}.role: Input should be user, assistant, system or developer", param="input")
            content = item.get("content")
            require(isinstance(content, str | list), f"{where}.content: Field required", param="input")
            text = block_text(content)
            if role in ("system", "developer"):
                system.append(text)
            elif role == "user":
                out.append(Message("user", texts=[text] if text else []))
            else:
                if text:
                    assistant().texts.append(text)
        elif typ in ("function_call", "custom_tool_call"):
            require(isinstance(item.get("call_id"), str) and isinstance(item.get("name"), str),
                    f"{where}: {typ} needs call_id and name", param="input")
            field = "arguments" if typ == "function_call" else "input"
            raw = item.get(field, "")
            require(isinstance(raw, str), f"{where}.{field}: Input should be a valid string", param="input")
            parsed: object = raw
            if typ == "function_call":
                try:
                    parsed = json.loads(raw) if raw else {}
                except ValueError:
                    parsed = raw
            seen.add(item["call_id"])
            assistant().calls.append(ToolCall(item["call_id"], item["name"], parsed))
        elif typ in ("function_call_output", "custom_tool_call_output"):
            cid = item.get("call_id")
            require(isinstance(cid, str), f"{where}.call_id: Field required", param="input")
            if cid not in seen:
                raise InvalidRequest(f"{where}: no earlier call found for call_id {cid!r}", param="input")
            out.append(Message("tool", results=[ToolResult(cid, block_text(item.get("output")))]))
        elif typ == "reasoning":
            blob = item.get("encrypted_content")
            require(blob is None or isinstance(blob, str), f"{where}.encrypted_content: Input should be a string",
                    param="input")
            if blob and FOREIGN_REASONING_REJECTED in faults and not _minted_here(blob):
                raise InvalidRequest(f"{where}.encrypted_content: the encrypted content could not be decrypted "
                                     "or parsed", param="input")
            text = block_text(item.get("content")) or block_text(item.get("summary"))
            if text:
                assistant().thinking.append(text)
        # other item types (item_reference, hosted tool calls) are accepted and ignored
    return system, out


def _make_id(prefix: str, seed, *parts, n: int = 32) -> str:
    """An item or response id: OpenAI's own are hex (resp_67cc...), under `other-id-formats`;
    base62 by default."""
    if wire.active("other-id-formats"):
        return prefix + ids.digest(seed, prefix, *parts).hex()[:48]
    return ids.make(prefix, seed, *parts, n=n)


def _call_items(conv: Conversation, calls, seed, faults) -> tuple[list[dict], str]:
    """Output items for the planned calls (after the call faults), and text said instead of a call."""
    by_name = {t.name: t for t in conv.tools}
    items, said = [], ""
    for k, (call_id, name, js, obj) in enumerate(calls):
        tool = by_name.get(name)
        if tool is not None and tool.kind == "custom":
            raw = obj if isinstance(obj, str) else (compact_json(obj) if obj else "")
            if CUSTOM_TOOL_DROPPED in faults:  # no freeform support: the patch is said as plain text
                said += ("\n\n" if said else "") + raw
            elif CUSTOM_TOOL_AS_FUNCTION in faults:  # a chat-only translation wraps the text as JSON
                items.append({"id": _make_id("fc_", seed, k, n=32), "type": "function_call", "status": "completed",
                              "call_id": call_id, "name": name, "arguments": json.dumps({"input": raw})})
            else:
                items.append({"id": _make_id("ctc_", seed, k, n=32), "type": "custom_tool_call",
                              "status": "completed", "call_id": call_id, "name": name, "input": raw})
            continue
        item = {"id": _make_id("fc_", seed, k, n=32), "type": "function_call", "status": "completed",
                "call_id": call_id, "name": name, "arguments": js}
        if tool is not None and tool.namespace:
            if NAMESPACE_FLATTENED in faults:
                item["name"] = f"{tool.namespace}__{name}"
            else:
                item["namespace"] = tool.namespace
        items.append(item)
    return items, said


async def responses(request: web.Request, state, body: dict):
    faults = state.faults
    if RESPONSES_MISSING in faults:  # a chat-only server: the route does not exist
        raise InvalidRequest(f"Not found: {request.method} {request.path} is not served", status=404,
                             kind="not_found_error")
    answer = plan_answer(state, body, parse)
    conv = answer.conv
    reply, prompt, seed, model, created, calls, text = (answer.reply, answer.prompt, answer.seed, answer.model,
                                                        answer.created, answer.calls, answer.text)
    rid = _make_id("resp_", seed, n=32)
    summary_asked = isinstance(body.get("reasoning"), dict) and body["reasoning"].get("summary") is not None
    encrypted = ENCRYPTED_INCLUDE in (body.get("include") or [])

    items = []
    if reply.thinking is not None:
        rs = {"id": _make_id("rs_", seed, n=32), "type": "reasoning", "status": "completed"}
        if summary_asked:
            rs["summary"] = [{"type": "summary_text", "text": reply.thinking}]
        else:
            rs["summary"] = []
            rs["content"] = [{"type": "reasoning_text", "text": reply.thinking}]
        if encrypted:
            rs["encrypted_content"] = encrypted_reasoning(reply.thinking, faults)
        items.append(rs)
    call_items, said = _call_items(conv, calls, seed, faults)
    if said:
        text = f"{text}\n\n{said}" if text else said
    if text or not call_items:
        items.append({"id": _make_id("msg_", seed, n=32), "type": "message", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": part, "annotations": [], "logprobs": []}
                                  for part in wire.text_parts(text)]})
    items += call_items
    incomplete = reply.stop_reason == "max_tokens"
    out_tokens = reply.output_tokens
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": out_tokens,
             "output_tokens_details": {"reasoning_tokens": tokenizer.count(reply.thinking or "")},
             "total_tokens": prompt + out_tokens + (17 if USAGE_INCONSISTENT in faults else 0)}
    if wire.active("usage-without-cache"):
        usage.pop("input_tokens_details", None)
        usage.pop("output_tokens_details", None)

    def response_obj(status, output, with_usage):
        return {"id": rid, "object": "response", "created_at": created, "status": status,
                "background": False, "error": None,
                "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
                "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
                "metadata": body.get("metadata") or {}, "model": model, "output": output,
                "parallel_tool_calls": body.get("parallel_tool_calls", True), "previous_response_id": None,
                "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
                "store": False, "temperature": body.get("temperature", 1.0),
                "text": body.get("text") or {"format": {"type": "text"}},
                "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
                "top_p": body.get("top_p", 1.0), "truncation": "disabled",
                "usage": usage if with_usage else None, "user": None}

    final_status = "incomplete" if incomplete else "completed"
    if not conv.stream:
        return web.json_response(response_obj(final_status, items, True))

    resp = await start_sse(request)
    w = SSEWriter(resp, buffered=BUFFERED_STREAM in faults, prompt_tokens=prompt)
    seq = 0
    gap_pending = SEQUENCE_NUMBER_GAP in faults
    mismatch = DONE_TEXT_MISMATCH in faults

    async def ev(typ, **fields):
        nonlocal seq, gap_pending
        payload = {"type": typ, "sequence_number": seq, **fields}
        seq += 1
        if gap_pending and typ == "response.output_item.added":
            seq += 1  # one number skipped after the first item starts
            gap_pending = False
        await w.event(typ, payload)

    def done_text(full: str) -> str:
        return (full[:-1] if full else "?") if mismatch else full

    try:
        await ev("response.created", response=response_obj("in_progress", [], False))
        await ev("response.in_progress", response=response_obj("in_progress", [], False))
        for oi, item in enumerate(items):
            await _stream_item(ev, oi, item, done_text)
            await ev("response.output_item.done", output_index=oi, item=item)
        if STREAM_TRUNCATED not in faults and TERMINAL_EVENT_MISSING not in faults:
            await ev(f"response.{final_status}", response=response_obj(final_status, items, True))
        await w.close()
    except ClientGone:
        pass
    return resp


async def _stream_item(ev, oi: int, item: dict, done_text) -> None:
    """The events of one output item between output_item.added and output_item.done."""
    iid = item["id"]
    typ = item["type"]
    if typ == "function_call":
        await ev("response.output_item.added", output_index=oi, item={**item, "status": "in_progress", "arguments": ""})
        for piece in split_json(item["arguments"])[1:]:  # the Responses API sends no empty delta
            await ev("response.function_call_arguments.delta", item_id=iid, output_index=oi, delta=piece)
        await ev("response.function_call_arguments.done", item_id=iid, output_index=oi, name=item["name"],
                 arguments=item["arguments"])
        return
    if typ == "custom_tool_call":
        await ev("response.output_item.added", output_index=oi, item={**item, "status": "in_progress", "input": ""})
        for piece in split_text(item["input"]):
            await ev("response.custom_tool_call_input.delta", item_id=iid, output_index=oi, delta=piece)
        await ev("response.custom_tool_call_input.done", item_id=iid, output_index=oi, input=item["input"])
        return
    if typ == "reasoning":
        started = {k: v for k, v in item.items() if k != "encrypted_content"}
        started.update(status="in_progress", summary=[])
        if "content" in item:
            started["content"] = []
        await ev("response.output_item.added", output_index=oi, item=started)
        for si, part in enumerate(item["summary"]):
            await ev("response.reasoning_summary_part.added", item_id=iid, output_index=oi, summary_index=si,
                     part={**part, "text": ""})
            for piece in split_text(part["text"]):
                await ev("response.reasoning_summary_text.delta", item_id=iid, output_index=oi, summary_index=si,
                         delta=piece)
            await ev("response.reasoning_summary_text.done", item_id=iid, output_index=oi, summary_index=si,
                     text=done_text(part["text"]))
            await ev("response.reasoning_summary_part.done", item_id=iid, output_index=oi, summary_index=si,
                     part=part)
        for ci, part in enumerate(item.get("content", [])):
            await _stream_text_part(ev, iid, oi, ci, part, "reasoning_text", done_text)
        return
    await ev("response.output_item.added", output_index=oi, item={**item, "status": "in_progress", "content": []})
    for ci, part in enumerate(item["content"]):
        await _stream_text_part(ev, iid, oi, ci, part, "output_text", done_text)


async def _stream_text_part(ev, iid, oi, ci, part, kind, done_text) -> None:
    extra = {"logprobs": []} if kind == "output_text" else {}
    await ev("response.content_part.added", item_id=iid, output_index=oi, content_index=ci,
             part={**part, "text": ""})
    for piece in split_text(part["text"]):
        await ev(f"response.{kind}.delta", item_id=iid, output_index=oi, content_index=ci, delta=piece, **extra)
    await ev(f"response.{kind}.done", item_id=iid, output_index=oi, content_index=ci, text=done_text(part["text"]),
             **extra)
    await ev("response.content_part.done", item_id=iid, output_index=oi, content_index=ci, part=part)
