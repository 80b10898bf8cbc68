"""POST /v1/responses: the OpenAI Responses API, stream and non-stream (LiteLLM's default upstream
path for Anthropic requests to `openai/` models).

Rules (OpenAI Responses API reference, "Streaming events"; event payload fields as in the openai
Python SDK's `types/responses/*_event.py`):
- Input: a string, or a list of items — messages ({role, content: str | [input_text|output_text
  parts]}), `function_call`, `function_call_output`, `reasoning`. Consecutive assistant-side
  items (assistant message, function_call, reasoning) form one assistant turn. A
  function_call_output whose call_id matches no earlier function_call is a 400.
  `previous_response_id` is refused (nothing is stored: send the whole conversation).
- `reasoning.effort` takes the same values as the chat route (vLLM's ladder).
- Stream grammar, every event with `type` and an increasing `sequence_number`:
  response.created, response.in_progress, then per output item: response.output_item.added,
  [response.content_part.added, response.output_text.delta* | response.reasoning_text.delta*,
  response.output_text.done | response.reasoning_text.done, response.content_part.done] or
  [response.function_call_arguments.delta*, response.function_call_arguments.done],
  response.output_item.done; finally response.completed (or response.incomplete with
  incomplete_details.reason max_output_tokens). No `[DONE]` sentinel.
- Errors use the OpenAI shape of the chat route.
"""

from __future__ import annotations

import json

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
    is_int,
    require,
)
from conformance.engine.openai_route import effort_check, plan_answer
from conformance.engine.wire import ClientGone, SSEWriter, split_json, split_text, start_sse


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
    effort = None
    if reasoning is not None:
        require(isinstance(reasoning, dict), "reasoning: Input should be an object", param="reasoning")
        effort = reasoning.get("effort")
        effort_check(effort, faults, "reasoning.effort")
    tools = []
    for i, t in enumerate(body.get("tools") or []):
        require(isinstance(t, dict) and isinstance(t.get("type"), str), f"tools.{i}: Input should be a tool object",
                param="tools")
        if t["type"] != "function":
            continue
        require(isinstance(t.get("name"), str) and t["name"] != "", f"tools.{i}.name: Field required", param="tools")
        params = t.get("parameters") or {"type": "object", "properties": {}}
        require(isinstance(params, dict), f"tools.{i}.parameters: Input should be an object", param="tools")
        tools.append(Tool(t["name"], params, t.get("description") or ""))
    tc = body.get("tool_choice", "auto")
    choice, name = "auto", None
    if isinstance(tc, str):
        require(tc in ("none", "auto", "required"), "tool_choice: Input should be 'none', 'auto' or 'required'",
                param="tool_choice")
        choice = {"none": "none", "auto": "auto", "required": "any"}[tc]
    elif isinstance(tc, dict) and tc.get("type") == "function":
        require(isinstance(tc.get("name"), str), "tool_choice.name: Field required", param="tool_choice")
        choice, name = "tool", tc["name"]
    system = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    more_system, messages = _parse_input(body.get("input"))
    return Conversation(api="responses", model=model or "", system=system + more_system, messages=messages,
                        tools=tools, tool_choice=choice, tool_choice_name=name, max_tokens=mt,
                        thinking=effort is not None and effort != "none", stream=bool(stream),
                        parallel_tools=body.get("parallel_tool_calls") is not False)


def _parse_input(inp):
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
        elif typ == "function_call":
            require(isinstance(item.get("call_id"), str) and isinstance(item.get("name"), str),
                    f"{where}: function_call needs call_id and name", param="input")
            args = item.get("arguments", "")
            require(isinstance(args, str), f"{where}.arguments: Input should be a valid string", param="input")
            try:
                parsed = json.loads(args) if args else {}
            except ValueError:
                parsed = args
            seen.add(item["call_id"])
            assistant().calls.append(ToolCall(item["call_id"], item["name"], parsed))
        elif typ == "function_call_output":
            cid = item.get("call_id")
            require(isinstance(cid, str), f"{where}.call_id: Field required", param="input")
            if cid not in seen:
                raise InvalidRequest(f"{where}: no function_call found for call_id {cid!r}", param="input")
            out.append(Message("tool", results=[ToolResult(cid, block_text(item.get("output")))]))
        elif typ == "reasoning":
            text = block_text(item.get("content")) or block_text(item.get("summary"))
            if text:
                assistant().thinking.append(text)
        # other item types (item_reference, tool calls of hosted tools) are accepted and ignored
    return system, out


async def responses(request: web.Request, state, body: dict):
    faults = state.faults
    answer = plan_answer(state, body, parse)
    reply, prompt, seed, model, created, calls, text = (answer.reply, answer.prompt, answer.seed, answer.model,
                                                        answer.created, answer.calls, answer.text)
    def make_id(prefix, *parts):  # OpenAI's own ids are hex (resp_67cc...); ours base62 by default
        if wire.active("other-id-formats"):
            return prefix + ids.digest(seed, prefix, *parts).hex()[:48]
        return ids.make(prefix, seed, *parts, n=32)

    rid = make_id("resp_")

    items = []
    if reply.thinking is not None:
        items.append({"id": make_id("rs_"), "type": "reasoning", "summary": [],
                      "content": [{"type": "reasoning_text", "text": reply.thinking}], "status": "completed"})
    if text or not calls:
        items.append({"id": make_id("msg_"), "type": "message", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": part, "annotations": [], "logprobs": []}
                                  for part in wire.text_parts(text)]})
    for k, (call_id, name, js, _obj) in enumerate(calls):
        items.append({"id": make_id("fc_", k), "type": "function_call", "status": "completed",
                      "call_id": call_id, "name": name, "arguments": js})
    incomplete = reply.stop_reason == "max_tokens"
    out_tokens = reply.output_tokens
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": out_tokens,
             "output_tokens_details": {"reasoning_tokens": tokenizer.count(reply.thinking or "")},
             "total_tokens": prompt + out_tokens + (17 if "usage-inconsistent" in faults else 0)}
    if wire.active("usage-without-cache"):
        del usage["input_tokens_details"], usage["output_tokens_details"]

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
    if not answer.conv.stream:
        return web.json_response(response_obj(final_status, items, True))

    resp = await start_sse(request)
    w = SSEWriter(resp, buffered="buffered-stream" in faults, prompt_tokens=prompt)
    seq = 0

    async def ev(typ, **fields):
        nonlocal seq
        payload = {"type": typ, "sequence_number": seq, **fields}
        seq += 1
        await w.event(typ, payload)

    try:
        await ev("response.created", response=response_obj("in_progress", [], False))
        await ev("response.in_progress", response=response_obj("in_progress", [], False))
        for oi, item in enumerate(items):
            iid = item["id"]
            if item["type"] == "function_call":
                await ev("response.output_item.added", output_index=oi,
                         item={**item, "status": "in_progress", "arguments": ""})
                pieces = split_json(item["arguments"])[1:]  # the Responses API sends no empty delta
                for piece in pieces:
                    await ev("response.function_call_arguments.delta", item_id=iid, output_index=oi, delta=piece)
                await ev("response.function_call_arguments.done", item_id=iid, output_index=oi,
                         name=item["name"], arguments=item["arguments"])
            else:
                reasoning = item["type"] == "reasoning"
                await ev("response.output_item.added", output_index=oi,
                         item={**item, "status": "in_progress", "content": []})
                kind = "reasoning_text" if reasoning else "output_text"
                for ci, part in enumerate(item["content"]):  # several parts under several-text-blocks
                    empty_part = {**part, "text": ""}
                    await ev("response.content_part.added", item_id=iid, output_index=oi, content_index=ci,
                             part=empty_part)
                    for piece in split_text(part["text"]):
                        extra = {} if reasoning else {"logprobs": []}
                        await ev(f"response.{kind}.delta", item_id=iid, output_index=oi, content_index=ci,
                                 delta=piece, **extra)
                    extra = {} if reasoning else {"logprobs": []}
                    await ev(f"response.{kind}.done", item_id=iid, output_index=oi, content_index=ci,
                             text=part["text"], **extra)
                    await ev("response.content_part.done", item_id=iid, output_index=oi, content_index=ci,
                             part=part)
            await ev("response.output_item.done", output_index=oi, item=item)
        if "stream-truncated" not in faults:
            await ev(f"response.{final_status}", response=response_obj(final_status, items, True))
        await w.close()
    except ClientGone:
        pass
    return resp
