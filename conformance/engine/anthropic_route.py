"""POST /v1/messages (stream and non-stream, `?beta=true` accepted) and /v1/messages/count_tokens.

Rules (wire facts: the Anthropic Messages API reference and its streaming docs):
- Accepts everything the real clients send: `context_management`, adaptive thinking with
  `output_config.effort` up to xhigh/max, `{"role":"system"}` entries inside messages,
  `metadata.user_id` strings, `cache_control` on any block, `eager_input_streaming` on tools,
  every `tool_choice` form, unknown top-level fields (ignored, as an engine does).
- Refuses (400 invalid_request_error, the message names the field): missing/invalid model,
  max_tokens, messages; unknown block types; a tool_result whose tool_use_id matches no earlier
  tool_use; a thinking block sent back without its signature; thinking.budget_tokens < 1024 or
  >= max_tokens; a prompt over the context limit ("prompt is too long: N tokens > M maximum").
- Stream: message_start, ping, content blocks (index = position in content[]), thinking with a
  signature_delta before its stop, tool_use starting with input {} and a first partial_json "",
  a ping between blocks, message_delta with stop_reason, stop_sequence (always present) and
  cumulative usage, message_stop. Deltas are small and split at awkward places (wire.py).
"""

from __future__ import annotations

import json
import time

from aiohttp import web

from conformance.engine import faults as fault_modes
from conformance.engine import ids, planner, wire
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
    is_num,
    require,
)
from conformance.engine.state import STATE, error_response, read_json
from conformance.engine.wire import ClientGone, SSEWriter, split_json, split_text, start_sse

BLOCK_TYPES = {
    "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "search_result",
    "container_upload", "mcp_tool_use", "mcp_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_reference",
}
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# What a closed request struct (fault strict-unknown-field) knows.
CLOSED_FIELDS = {"model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature",
                 "top_p", "top_k", "tools", "tool_choice", "metadata", "thinking", "output_config",
                 "service_tier", "container", "mcp_servers"}


def parse(body: dict, faults, *, count_only: bool = False) -> Conversation:
    if "strict-unknown-field" in faults:
        extra = sorted(k for k in body if k not in CLOSED_FIELDS)
        if extra:
            raise InvalidRequest(f"{extra[0]}: Extra inputs are not permitted")
    model = body.get("model")
    require(isinstance(model, str) and model != "", "model: Field required (a non-empty string)")
    max_tokens = body.get("max_tokens")
    if not count_only:
        require(max_tokens is not None, "max_tokens: Field required")
        require(is_int(max_tokens) and max_tokens >= 1, "max_tokens: Input should be an integer >= 1")
    if "stream" in body:
        require(isinstance(body["stream"], bool), "stream: Input should be a valid boolean")
    for name, lo, hi in (("temperature", 0, 1), ("top_p", 0, 1)):
        if body.get(name) is not None:
            require(is_num(body[name]) and lo <= body[name] <= hi,
                    f"{name}: Input should be a number between {lo} and {hi}")
    if body.get("top_k") is not None:
        require(is_int(body["top_k"]) and body["top_k"] >= 0, "top_k: Input should be an integer >= 0")
    md = body.get("metadata")
    if md is not None:
        require(isinstance(md, dict), "metadata: Input should be an object")
        if md.get("user_id") is not None:
            require(isinstance(md["user_id"], str), "metadata.user_id: Input should be a valid string")
    stop = body.get("stop_sequences")
    if stop is not None:
        require(isinstance(stop, list) and all(isinstance(s, str) for s in stop),
                "stop_sequences: Input should be a list of strings")

    system = _parse_system(body.get("system"))
    tools = _parse_tools(body.get("tools"))
    choice, choice_name = _parse_tool_choice(body.get("tool_choice"))
    tc = body.get("tool_choice")
    parallel = not (isinstance(tc, dict) and tc.get("disable_parallel_tool_use") is True)
    thinking, display = _parse_thinking(body, max_tokens, faults, count_only)
    messages = _parse_messages(body.get("messages"), faults)
    return Conversation(
        api="anthropic", model=model, system=system, messages=messages, tools=tools,
        tool_choice=choice, tool_choice_name=choice_name,
        max_tokens=max_tokens if is_int(max_tokens) else None, stop=list(stop or []),
        thinking=thinking, thinking_display=display, stream=bool(body.get("stream")), parallel_tools=parallel,
    )


def _parse_system(system) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [system]
    require(isinstance(system, list), "system: Input should be a string or a list of text blocks")
    out = []
    for i, b in enumerate(system):
        require(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str),
                f"system.{i}: Input should be a text block {{type: 'text', text: string}}")
        out.append(b["text"])
    return out


def _parse_tools(tools) -> list[Tool]:
    if tools is None:
        return []
    require(isinstance(tools, list), "tools: Input should be a list")
    out = []
    for i, t in enumerate(tools):
        require(isinstance(t, dict), f"tools.{i}: Input should be an object")
        typ = t.get("type")
        if typ not in (None, "custom"):
            require(isinstance(typ, str), f"tools.{i}.type: Input should be a string")
            continue  # server tools (web_search_..., bash_..., text_editor_...) have no schema here
        require(isinstance(t.get("name"), str) and t["name"] != "", f"tools.{i}.name: Field required")
        schema = t.get("input_schema")
        require(isinstance(schema, dict), f"tools.{i}.input_schema: Field required (a JSON Schema object)")
        require(schema.get("type", "object") == "object", f"tools.{i}.input_schema.type: Input should be 'object'")
        out.append(Tool(t["name"], schema, t.get("description") or ""))
    return out


def _parse_tool_choice(tc):
    if tc is None:
        return "auto", None
    require(isinstance(tc, dict) and tc.get("type") in ("auto", "any", "tool", "none"),
            "tool_choice: Input should be {type: auto|any|tool|none}")
    if tc["type"] == "tool":
        require(isinstance(tc.get("name"), str), "tool_choice.name: Field required")
        return "tool", tc["name"]
    return tc["type"], None


def _parse_thinking(body, max_tokens, faults, count_only):
    th = body.get("thinking")
    oc = body.get("output_config")
    effort = None
    if oc is not None:
        require(isinstance(oc, dict), "output_config: Input should be an object")
        effort = oc.get("effort")
        if effort is not None:
            require(effort in EFFORTS, f"output_config.effort: Input should be one of {', '.join(EFFORTS)}")
    if th is None:
        return False, "summarized"
    require(isinstance(th, dict) and th.get("type") in ("enabled", "disabled", "adaptive"),
            "thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'")
    if th["type"] == "enabled":
        b = th.get("budget_tokens")
        require(is_int(b), "thinking.enabled.budget_tokens: Field required")
        require(b >= 1024, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        if not count_only and is_int(max_tokens):
            require(b < max_tokens, "`max_tokens` must be greater than `thinking.budget_tokens`")
    if th["type"] == "adaptive" and effort is not None and "strict-adaptive-effort" in faults:
        raise InvalidRequest("thinking.type 'adaptive' cannot be combined with output_config.effort")
    display = th.get("display") or "summarized"
    return th["type"] != "disabled", display


def _parse_messages(messages, faults) -> list[Message]:
    require(isinstance(messages, list), "messages: Field required (a list)")
    require(len(messages) > 0, "messages: at least one message is required")
    out: list[Message] = []
    seen_tool_ids: set[str] = set()
    for i, m in enumerate(messages):
        require(isinstance(m, dict), f"messages.{i}: Input should be an object")
        role = m.get("role")
        require(role in ("user", "assistant", "system"), f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if role == "system" and "system-role-in-messages" in faults:
            raise InvalidRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = m.get("content")
        msg = Message(role=role)
        if isinstance(content, str):
            msg.texts.append(content)
            out.append(msg)
            continue
        require(isinstance(content, list), f"messages.{i}.content: Input should be a string or a list of blocks")
        for j, b in enumerate(content):
            where = f"messages.{i}.content.{j}"
            require(isinstance(b, dict) and isinstance(b.get("type"), str), f"{where}: Input should be a block with a type")
            typ = b["type"]
            require(typ in BLOCK_TYPES, f"{where}: Input tag '{typ}' found using 'type' does not match any of the expected tags")
            if typ == "text":
                require(isinstance(b.get("text"), str), f"{where}.text: Field required")
                msg.texts.append(b["text"])
            elif typ == "tool_use":
                require(role == "assistant", f"{where}: tool_use blocks are only allowed in assistant messages")
                require(isinstance(b.get("id"), str) and isinstance(b.get("name"), str),
                        f"{where}: tool_use needs id and name")
                require(isinstance(b.get("input"), dict), f"{where}.input: Input should be an object")
                seen_tool_ids.add(b["id"])
                msg.calls.append(ToolCall(b["id"], b["name"], b["input"]))
            elif typ == "server_tool_use" or typ == "mcp_tool_use":
                if isinstance(b.get("id"), str):
                    seen_tool_ids.add(b["id"])
            elif typ == "tool_result":
                require(role == "user", f"{where}: tool_result blocks are only allowed in user messages")
                tid = b.get("tool_use_id")
                require(isinstance(tid, str), f"{where}.tool_use_id: Field required")
                if tid not in seen_tool_ids:
                    raise InvalidRequest(
                        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block earlier "
                        "in the conversation.")
                msg.results.append(ToolResult(tid, block_text(b.get("content")), bool(b.get("is_error"))))
            elif typ == "thinking":
                require(role == "assistant", f"{where}: thinking blocks are only allowed in assistant messages")
                sig = b.get("signature")
                if not isinstance(sig, str) or sig == "":
                    raise InvalidRequest(f"{where}.signature: Field required (a thinking block sent back "
                                         "must keep the signature it arrived with)")
                require(isinstance(b.get("thinking"), str), f"{where}.thinking: Field required")
                msg.thinking.append(b["thinking"])
        out.append(msg)
    return out


# ---- rendering ------------------------------------------------------------------------------


def _stop_reason(reply, faults) -> tuple[str, str | None]:
    reason, seq = reply.stop_reason, reply.stop_sequence
    if reason == "tool_use" and ("tool-stop-reason-wrong" in faults or "tool-call-as-text" in faults):
        reason = "end_turn"
    if reason == "stop_sequence" and "stop-reason-wrong-on-stop-string" in faults:
        reason, seq = "end_turn", None
    return reason, seq


def content_blocks(reply, faults, seed: bytes, display: str = "summarized") -> list[dict]:
    """The final content[] of the message (faults that change content applied)."""
    blocks: list[dict] = []
    if wire.active("thinking-omitted"):
        display = "omitted"
    if reply.thinking is not None:
        shown = "" if display == "omitted" else reply.thinking  # thinking.display omitted: signature only
        blocks.append({"type": "thinking", "thinking": shown, "signature": ids.signature(reply.thinking)})
    text = reply.text
    calls = reply.calls
    if calls and "tool-call-as-text" in faults:
        text += "".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)
        calls = []
    if text or (not calls and reply.thinking is None):
        blocks.extend({"type": "text", "text": part} for part in wire.text_parts(text))
    for k, (name, args) in enumerate(calls):
        blocks.append({"type": "tool_use", "id": ids.make(wire.other_id("toolu_01", "toolu_bdrk_01"), seed, k, n=22),
                       "name": name, "input": args})
    return blocks


def _usage(conv_tokens: int, output: int) -> dict:
    if wire.active("usage-without-cache"):
        return {"input_tokens": conv_tokens, "output_tokens": output}
    usage = {"input_tokens": conv_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": output}
    if wire.active("usage-with-cache"):  # the breakdown of cache writes by TTL, and the tier
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
        usage["service_tier"] = "standard"
    return usage


def _plan(state, conv: Conversation):
    prompt = conv.prompt_tokens()
    limit = state.config.max_context
    if prompt > limit:
        if "over-limit-not-refused" not in state.faults:
            raise InvalidRequest(f"prompt is too long: {prompt} tokens > {limit} maximum")
        conv.truncated_tokens = prompt - (limit - 1)
        prompt = limit - 1  # silently truncated: the engine reads only what fits
    ctx = planner.Context(state.faults, state.scenarios, limit, prompt)
    return planner.plan(conv, ctx), prompt


async def messages(request: web.Request, state, body: dict):
    faults = state.faults
    conv = parse(body, faults)
    reply, prompt = _plan(state, conv)
    seed = ids.digest(json.dumps(body, sort_keys=True))
    msg_id = ids.make(wire.other_id("msg_01", "msg_bdrk_01"), seed, n=22)
    model = fault_modes.WRONG_MODEL_NAME if "wrong-model" in faults else conv.model
    blocks = content_blocks(reply, faults, seed, conv.thinking_display)
    reason, seq = _stop_reason(reply, faults)
    headers = {"request-id": ids.make("req_01", seed, time.time_ns(), n=22)}
    if not conv.stream:
        out = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
               "stop_reason": reason, "stop_sequence": seq, "usage": _usage(prompt, reply.output_tokens)}
        if "tool-args-invalid-json" in faults:
            for b in out["content"]:
                if b["type"] == "tool_use":
                    b["input"] = {}  # cannot carry broken JSON here: arguments that violate the schema
        if seq is None and "nonstream-stop-sequence-omitted" in faults:
            del out["stop_sequence"]
        return web.json_response(out, headers=headers)
    resp = await start_sse(request, headers)
    try:
        await _stream(resp, msg_id, model, blocks, reason, seq, prompt, reply.output_tokens, faults, conv)
    except ClientGone:
        pass
    return resp


async def _stream(resp, msg_id, model, blocks, reason, seq, prompt, output, faults, conv):
    w = SSEWriter(resp, buffered="buffered-stream" in faults, prompt_tokens=prompt)
    start = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": _usage(prompt, 1)}
    if "usage-inconsistent" in faults:  # output_tokens later "go down"; input_tokens change below
        start["usage"]["output_tokens"] = output + 10
    if "message-start-incomplete" in faults:
        for k in ("type", "role", "usage"):
            del start[k]
    await w.event("message_start", {"type": "message_start", "message": start})
    await w.event("ping", {"type": "ping"})
    shift = 1 if "block-index-broken" in faults else 0
    for pos, b in enumerate(blocks):
        idx = pos + shift
        typ = b["type"]
        if pos == 1:
            await w.event("ping", {"type": "ping"})
        if typ == "thinking":
            await w.event("content_block_start", {"type": "content_block_start", "index": idx,
                                                  "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for piece in split_text(b["thinking"]):
                await w.event("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                      "delta": {"type": "thinking_delta", "thinking": piece}})
            await w.event("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                  "delta": {"type": "signature_delta", "signature": b["signature"]}})
        elif typ == "text":
            await w.event("content_block_start", {"type": "content_block_start", "index": idx,
                                                  "content_block": {"type": "text", "text": ""}})
            for piece in split_text(b["text"]):
                await w.event("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                      "delta": {"type": "text_delta", "text": piece}})
        else:
            cb = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            if "tool-use-start-without-input" in faults:
                del cb["input"]
            await w.event("content_block_start", {"type": "content_block_start", "index": idx, "content_block": cb})
            js = compact_json(b["input"])
            if "tool-args-invalid-json" in faults:
                js = js[:-1]
            for piece in split_json(js):
                await w.event("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                      "delta": {"type": "input_json_delta", "partial_json": piece}})
        await w.event("content_block_stop", {"type": "content_block_stop", "index": idx})
    delta = {"stop_reason": reason, "stop_sequence": seq}
    if "stop-sequence-missing" in faults:
        del delta["stop_sequence"]
    usage = _usage(prompt + (17 if "usage-inconsistent" in faults else 0), output)
    await w.event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    if "stream-truncated" not in faults:
        await w.event("message_stop", {"type": "message_stop"})
    await w.close()


async def count_tokens_handler(request: web.Request):
    state = request.app[STATE]
    if "count-tokens-missing" in state.faults:
        return error_response("anthropic", InvalidRequest(
            f"Not found: POST {request.path} is not served", status=404, kind="not_found_error"), state.faults)
    try:
        body = await read_json(request)
        conv = parse(body, state.faults, count_only=True)
    except InvalidRequest as e:
        return error_response("anthropic", e, state.faults)
    return web.json_response({"input_tokens": conv.prompt_tokens()})
