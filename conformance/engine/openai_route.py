"""POST /v1/chat/completions (stream, stream_options.include_usage, non-stream).

Rules — strictness follows vLLM's OpenAI-compatible server (vllm/entrypoints/openai/protocol.py,
ChatCompletionRequest; vllm/entrypoints/openai/reasoning_effort.py), see docs/engine.md:
- Unknown fields are accepted and ignored (vLLM's models allow extra fields).
- `reasoning_effort` must be one of none, minimal, low, medium, high, xhigh, max (vLLM's
  ReasoningEffortValue); anything else is a 400. Fault `strict-adaptive-effort` narrows it to
  low/medium/high (vLLM releases before the effort ladder).
- `tool_choice`: none | auto | required | {type: function, function: {name}}; a named or
  required choice needs `tools`; `stream_options` only with `stream: true`; `n` must be 1.
- Prefix cache (vLLM's automatic prefix caching): every message boundary of tools + messages is
  a cache point (1024+ tokens); `usage.prompt_tokens_details.cached_tokens` reports what was read.
  A system message starting with Claude Code's billing-header line is hashed without that line.
- Faults of the client-wire checks acted on here too: `parallel-calls-truncated` (one call
  survives), `schema-grammar-fail` (a forced function whose schema uses `pattern`: 500).
- A `tool` message whose tool_call_id matches no earlier assistant tool call is a 400.
- Errors: `{"error": {"message", "type", "param", "code"}}` (vLLM's ErrorResponse).
- Stream: a first chunk with role, then content / reasoning_content / tool_call deltas (the first
  delta of a call carries index, id, type and name with arguments ""; later ones only argument
  fragments), a last chunk with an empty delta and finish_reason, with include_usage one more
  chunk with `choices: []` and usage (earlier chunks carry `usage: null`), then `data: [DONE]`.
- `plan_answer` is the setup both OpenAI routes (this one and /v1/responses) share: parse, plan,
  the id seed, the model name, the rendered tool calls. Each route keeps its own wire shape.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

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
    refuse_ungrammatical,
    require,
)
from conformance.engine.faults import (
    BUFFERED_STREAM,
    OVER_LIMIT_NOT_REFUSED,
    PARALLEL_CALLS_TRUNCATED,
    STREAM_TRUNCATED,
    STRICT_ADAPTIVE_EFFORT,
    STRICT_UNKNOWN_FIELD,
    TOOL_ARGS_INVALID_JSON,
    TOOL_ARGS_NOT_STRING,
    TOOL_CALL_AS_TEXT,
    TOOL_STOP_REASON_WRONG,
    USAGE_INCONSISTENT,
    WRONG_MODEL,
)
from conformance.engine.prefix_cache import chat_segments, lookup
from conformance.engine.wire import ClientGone, SSEWriter, split_json, split_text, start_sse

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
OLD_EFFORTS = ("low", "medium", "high")
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
CLOSED_FIELDS = {"messages", "model", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "max_tokens",
                 "max_completion_tokens", "n", "presence_penalty", "response_format", "seed", "stop", "stream",
                 "stream_options", "temperature", "top_p", "tools", "tool_choice", "reasoning_effort",
                 "parallel_tool_calls", "user"}
FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


def effort_check(value, faults, field="reasoning_effort"):
    allowed = OLD_EFFORTS if STRICT_ADAPTIVE_EFFORT in faults else EFFORTS
    if value is not None:
        require(value in allowed, f"{field}: Input should be {', '.join(repr(v) for v in allowed)} (got {value!r})",
                param=field)


def tool_choice(tc, tools, faults):
    if tc is None:
        return "auto", None
    if isinstance(tc, str):
        require(tc in ("none", "auto", "required"), "tool_choice: Input should be 'none', 'auto', 'required' "
                "or a named function", param="tool_choice")
        if tc == "required":
            require(bool(tools), "tool_choice 'required' needs tools", param="tool_choice")
        return {"none": "none", "auto": "auto", "required": "any"}[tc], None
    require(isinstance(tc, dict), "tool_choice: Input should be a string or an object", param="tool_choice")
    name = (tc.get("function") or {}).get("name") if isinstance(tc.get("function"), dict) else tc.get("name")
    require(isinstance(name, str), "tool_choice.function.name: Field required", param="tool_choice")
    require(any(t.name == name for t in tools), f"tool_choice names the function {name!r}, which is not in tools",
            param="tool_choice")
    return "tool", name


def parse(body: dict, faults) -> Conversation:
    if STRICT_UNKNOWN_FIELD in faults:
        extra = sorted(k for k in body if k not in CLOSED_FIELDS)
        if extra:
            raise InvalidRequest(f"{extra[0]}: Extra inputs are not permitted", param=extra[0])
    model = body.get("model")
    require(model is None or isinstance(model, str), "model: Input should be a valid string", param="model")
    mt = body.get("max_completion_tokens", body.get("max_tokens"))
    if mt is not None:
        require(is_int(mt) and mt >= 1, "max_tokens: Input should be an integer >= 1", param="max_tokens")
    n = body.get("n", 1)
    require(n in (1, None), "n: only n=1 is supported by this engine", param="n")
    stream = body.get("stream", False)
    require(stream is None or isinstance(stream, bool), "stream: Input should be a valid boolean", param="stream")
    so = body.get("stream_options")
    if so is not None:
        require(isinstance(so, dict), "stream_options: Input should be an object", param="stream_options")
        require(bool(stream), "Stream options can only be defined when `stream=True`.", param="stream_options")
    if body.get("temperature") is not None:
        require(is_num(body["temperature"]) and 0 <= body["temperature"] <= 2,
                "temperature: Input should be a number between 0 and 2", param="temperature")
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    require(stop is None or (isinstance(stop, list) and all(isinstance(s, str) for s in stop)),
            "stop: Input should be a string or a list of strings", param="stop")
    effort_check(body.get("reasoning_effort"), faults)
    tools = []
    raw_tools = body.get("tools")
    if raw_tools is not None:
        require(isinstance(raw_tools, list), "tools: Input should be a list", param="tools")
        for i, t in enumerate(raw_tools):
            require(isinstance(t, dict) and t.get("type", "function") == "function" and isinstance(t.get("function"), dict),
                    f"tools.{i}: Input should be {{type: 'function', function: {{name, parameters}}}}", param="tools")
            fn = t["function"]
            require(isinstance(fn.get("name"), str) and fn["name"] != "", f"tools.{i}.function.name: Field required",
                    param="tools")
            params = fn.get("parameters") or {"type": "object", "properties": {}}
            require(isinstance(params, dict), f"tools.{i}.function.parameters: Input should be an object", param="tools")
            tools.append(Tool(fn["name"], params, fn.get("description") or ""))
    choice, choice_name = tool_choice(body.get("tool_choice"), tools, faults)
    refuse_ungrammatical(tools, choice, choice_name, faults)
    effort = body.get("reasoning_effort")
    ctk = body.get("chat_template_kwargs") if isinstance(body.get("chat_template_kwargs"), dict) else {}
    thinking = (effort is not None and effort != "none") or bool(ctk.get("enable_thinking") or ctk.get("thinking"))
    system, messages = parse_messages(body.get("messages"))
    return Conversation(api="openai", model=model or "", system=system, messages=messages, tools=tools,
                        tool_choice=choice, tool_choice_name=choice_name, max_tokens=mt, stop=list(stop or []),
                        thinking=thinking, stream=bool(stream),
                        parallel_tools=body.get("parallel_tool_calls") is not False)


def parse_messages(messages):
    require(isinstance(messages, list), "messages: Field required (a list)", param="messages")
    require(len(messages) > 0, "messages: at least one message is required", param="messages")
    system: list[str] = []
    out: list[Message] = []
    seen: set[str] = set()
    for i, m in enumerate(messages):
        where = f"messages.{i}"
        require(isinstance(m, dict), f"{where}: Input should be an object", param="messages")
        role = m.get("role")
        require(role in ROLES, f"{where}.role: Input should be one of {', '.join(ROLES)}", param="messages")
        content = m.get("content")
        if role in ("system", "developer"):
            require(isinstance(content, str | list), f"{where}.content: Field required", param="messages")
            system.append(block_text(content))
            continue
        if role == "user":
            require(isinstance(content, str | list), f"{where}.content: Field required", param="messages")
            msg = Message("user")
            if isinstance(content, str):
                msg.texts.append(content)
            else:
                for j, part in enumerate(content):
                    require(isinstance(part, dict) and isinstance(part.get("type"), str),
                            f"{where}.content.{j}: Input should be a content part with a type", param="messages")
                    if part["type"] == "text":
                        require(isinstance(part.get("text"), str), f"{where}.content.{j}.text: Field required",
                                param="messages")
                        msg.texts.append(part["text"])
            out.append(msg)
        elif role == "assistant":
            msg = Message("assistant")
            if content is not None:
                require(isinstance(content, str | list), f"{where}.content: Input should be a string", param="messages")
                if block_text(content):
                    msg.texts.append(block_text(content))
            rc = m.get("reasoning_content") or m.get("reasoning")
            if isinstance(rc, str) and rc:
                msg.thinking.append(rc)
            calls = m.get("tool_calls")
            if calls is not None:
                require(isinstance(calls, list), f"{where}.tool_calls: Input should be a list", param="messages")
                for j, c in enumerate(calls):
                    fn = c.get("function") if isinstance(c, dict) else None
                    require(isinstance(fn, dict) and isinstance(c.get("id"), str) and isinstance(fn.get("name"), str),
                            f"{where}.tool_calls.{j}: needs id and function.name", param="messages")
                    args = fn.get("arguments", "")
                    require(isinstance(args, str), f"{where}.tool_calls.{j}.function.arguments: Input should be "
                            "a valid string", param="messages")
                    try:
                        parsed = json.loads(args) if args else {}
                    except ValueError:
                        parsed = args
                    seen.add(c["id"])
                    msg.calls.append(ToolCall(c["id"], fn["name"], parsed))
            out.append(msg)
        elif role == "tool":
            tid = m.get("tool_call_id")
            require(isinstance(tid, str), f"{where}.tool_call_id: Field required", param="messages")
            if tid not in seen:
                raise InvalidRequest(f"{where}: tool_call_id {tid!r} matches no earlier assistant tool call",
                                     param="messages")
            out.append(Message("tool", results=[ToolResult(tid, block_text(content))]))
        else:  # legacy function role
            out.append(Message("tool", results=[ToolResult(str(m.get("name", "")), block_text(content))]))
    return system, out


def plan_reply(state, conv):
    prompt = conv.prompt_tokens()
    limit = state.config.max_context
    if prompt > limit:
        if OVER_LIMIT_NOT_REFUSED not in state.faults:
            raise InvalidRequest(
                f"This model's maximum context length is {limit} tokens. However, your request has "
                f"{prompt} input tokens. Please reduce the length of the input messages.", param="messages")
        conv.truncated_tokens = prompt - (limit - 1)
        prompt = limit - 1
    return planner.plan(conv, planner.Context(state.faults, state.scenarios, limit, prompt)), prompt


def finish_reason(reply, faults) -> str:
    fr = FINISH[reply.stop_reason]
    if fr == "tool_calls" and (TOOL_STOP_REASON_WRONG in faults or TOOL_CALL_AS_TEXT in faults):
        fr = "stop"
    return fr


def rendered_calls(reply, faults, seed):
    """[(id, name, arguments string or object)] after faults; text additions for tool-call-as-text."""
    if TOOL_CALL_AS_TEXT in faults:
        extra = "".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in reply.calls)
        return [], extra
    out = []
    calls = reply.calls[:1] if PARALLEL_CALLS_TRUNCATED in faults else reply.calls  # the parser stops after one
    for k, (name, args) in enumerate(calls):
        js = compact_json(args)
        if TOOL_ARGS_INVALID_JSON in faults:
            js = js[:-1]
        call_id = ("chatcmpl-tool-" + ids.digest(seed, "call", k).hex()[:32] if wire.active("other-id-formats")
                   else ids.make("call_", seed, k, n=24))  # vLLM: chatcmpl-tool-<uuid hex>
        out.append((call_id, name, js, args))
    return out, ""


def _usage(prompt, output, faults, cached: int = 0):
    total = prompt + output + (17 if USAGE_INCONSISTENT in faults else 0)
    usage = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": total}
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}  # vLLM with prefix caching
    if wire.active("usage-with-cache"):  # OpenAI: the cached part of the prompt, and reasoning
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
        usage["completion_tokens_details"] = {"reasoning_tokens": 0, "audio_tokens": 0,
                                              "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    return usage


@dataclass
class Answer:
    """What an OpenAI route answers, before the route gives it its wire shape."""
    conv: Conversation
    reply: planner.Reply
    prompt: int  # prompt tokens as reported (cut to the limit under over-limit-not-refused)
    seed: str  # digest of the body: the same request gets the same ids
    model: str
    created: int
    calls: list  # rendered_calls: (id, name, arguments string, arguments object)
    text: str  # the reply's text, plus the calls written out under tool-call-as-text


def plan_answer(state, body: dict, parse_body: Callable[[dict, frozenset], Conversation]) -> Answer:
    """Parse `body` with the route's own `parse_body`, plan the reply and render it after faults."""
    faults = state.faults
    conv = parse_body(body, faults)
    reply, prompt = plan_reply(state, conv)
    seed = ids.digest(json.dumps(body, sort_keys=True))
    model = fault_modes.WRONG_MODEL_NAME if WRONG_MODEL in faults else (conv.model or state.config.model)
    calls, extra_text = rendered_calls(reply, faults, seed)
    return Answer(conv, reply, prompt, seed, model, int(time.time()), calls, reply.text + extra_text)


async def chat(request: web.Request, state, body: dict):
    faults = state.faults
    answer = plan_answer(state, body, parse)
    reply, prompt, model, created, calls, text = (answer.reply, answer.prompt, answer.model, answer.created,
                                                  answer.calls, answer.text)
    cid = ("chatcmpl-" + ids.digest(answer.seed, "chat").hex()[:32] if wire.active("other-id-formats")
           else ids.make("chatcmpl-", answer.seed, n=29))  # vLLM: chatcmpl-<uuid hex>
    fr = finish_reason(reply, faults)
    # vLLM names the matched stop string (or stop token id) in a non-standard `stop_reason` on the
    # choice (vllm/entrypoints/openai/protocol.py, ChatCompletionResponseChoice.stop_reason): a
    # translating router needs it to answer Anthropic's stop_reason stop_sequence + the string.
    matched_stop = reply.stop_sequence if reply.stop_reason == "stop_sequence" else None
    not_string = TOOL_ARGS_NOT_STRING in faults
    cached, _ = lookup(state, chat_segments(body), prompt)
    if not answer.conv.stream:
        msg = {"role": "assistant", "content": text if (text or not calls) else None, "refusal": None,
               "tool_calls": [{"id": i, "type": "function",
                               "function": {"name": n, "arguments": a if not not_string else obj}}
                              for i, n, a, obj in calls]}
        if reply.thinking is not None:
            msg["reasoning_content"] = reply.thinking
        out = {"id": cid, "object": "chat.completion", "created": created, "model": model,
               "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": fr,
                            "stop_reason": matched_stop}],
               "usage": _usage(prompt, reply.output_tokens, faults, cached)}
        return web.json_response(out)
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    resp = await start_sse(request)
    w = SSEWriter(resp, buffered=BUFFERED_STREAM in faults, prompt_tokens=prompt - cached)

    async def chunk(delta, finish=None):
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish,
                          "stop_reason": matched_stop if finish else None}]}
        if include_usage:
            c["usage"] = None
        await w.event(None, c)

    try:
        await chunk({"role": "assistant", "content": ""})
        if reply.thinking is not None:
            for piece in split_text(reply.thinking):
                await chunk({"reasoning_content": piece})
        for piece in split_text(text):
            await chunk({"content": piece})
        for k, (call_id, name, js, obj) in enumerate(calls):
            if not_string:
                await chunk({"tool_calls": [{"index": k, "id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": obj}}]})
                continue
            pieces = split_json(js)
            await chunk({"tool_calls": [{"index": k, "id": call_id, "type": "function",
                                         "function": {"name": name, "arguments": pieces[0]}}]})
            for piece in pieces[1:]:
                await chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
        await chunk({}, fr)
        if include_usage:
            await w.event(None, {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                 "choices": [], "usage": _usage(prompt, reply.output_tokens, faults, cached)})
        if STREAM_TRUNCATED not in faults:
            await w.event(None, "[DONE]")
        await w.close()
    except ClientGone:
        pass
    return resp
