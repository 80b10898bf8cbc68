"""POST /v1/messages (stream and non-stream, `?beta=true` accepted) and /v1/messages/count_tokens.

Rules (wire facts: the Anthropic Messages API reference and its streaming docs):
- What the route accepts and refuses is `anthropic_request.py`; the prefix cache behind usage's
  cache_read / cache_creation input tokens is `prefix_cache.py`.
- `max_tokens` above what the context leaves (128000 from Claude Code 2.1.332) is clamped to it;
  a prompt over the context limit is refused ("prompt is too long: N tokens > M maximum").
- Stream: message_start, ping, content blocks (index = position in content[]), thinking with a
  signature_delta before its stop, tool_use starting with input {} and a first partial_json "",
  a ping between blocks, message_delta with stop_reason, stop_sequence (always present) and
  cumulative usage, message_stop. Deltas are small and split at awkward places (wire.py).
- The faults that change the answer (its content, its stream, its usage) act here.
"""

from __future__ import annotations

import json
import time

from aiohttp import web

from conformance.engine import faults as fault_modes
from conformance.engine import ids, planner, wire
from conformance.engine.anthropic_request import betas_of, parse
from conformance.engine.conversation import (
    Conversation,
    InvalidRequest,
    compact_json,
)
from conformance.engine.faults import (
    BLOCK_INDEX_BROKEN,
    BUFFERED_STREAM,
    COUNT_TOKENS_MISSING,
    MAX_TOKENS_OVER_CONTEXT,
    MESSAGE_START_INCOMPLETE,
    NON_STREAM_FALLBACK,
    NONSTREAM_STOP_SEQUENCE_OMITTED,
    OVER_LIMIT_NOT_REFUSED,
    PARALLEL_CALLS_TRUNCATED,
    STOP_REASON_WRONG_ON_STOP_STRING,
    STOP_SEQUENCE_MISSING,
    STREAM_TRUNCATED,
    TOOL_ARGS_INVALID_JSON,
    TOOL_CALL_AS_TEXT,
    TOOL_STOP_REASON_WRONG,
    TOOL_USE_START_WITHOUT_INPUT,
    USAGE_INCONSISTENT,
    WRONG_MODEL,
)
from conformance.engine.prefix_cache import lookup, messages_segments
from conformance.engine.state import STATE, error_response, read_json
from conformance.engine.wire import ClientGone, SSEWriter, split_json, split_text, start_sse


def _stop_reason(reply, faults) -> tuple[str, str | None]:
    reason, seq = reply.stop_reason, reply.stop_sequence
    if reason == "tool_use" and (TOOL_STOP_REASON_WRONG in faults or TOOL_CALL_AS_TEXT in faults):
        reason = "end_turn"
    if reason == "stop_sequence" and STOP_REASON_WRONG_ON_STOP_STRING in faults:
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
    if PARALLEL_CALLS_TRUNCATED in faults:
        calls = calls[:1]  # the parser stops after the first call (llama.cpp #14101; vLLM #57791)
    if calls and TOOL_CALL_AS_TEXT in faults:
        text += "".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)
        calls = []
    if text or (not calls and reply.thinking is None):
        blocks.extend({"type": "text", "text": part} for part in wire.text_parts(text))
    for k, (name, args) in enumerate(calls):
        blocks.append({"type": "tool_use", "id": ids.make(wire.other_id("toolu_01", "toolu_bdrk_01"), seed, k, n=22),
                       "name": name, "input": args})
    return blocks


def _usage(conv_tokens: int, output: int, cached: tuple[int, int] = (0, 0)) -> dict:
    """Usage in the Messages API's shape: `input_tokens` are the prompt tokens neither read from
    nor written to the prefix cache (`cached` = (read, written))."""
    read, written = cached
    if wire.active("usage-without-cache"):  # a server without a prefix cache reports none of it
        return {"input_tokens": conv_tokens, "output_tokens": output}
    usage = {"input_tokens": conv_tokens - read - written, "cache_creation_input_tokens": written,
             "cache_read_input_tokens": read, "output_tokens": output}
    if wire.active("usage-with-cache"):  # the breakdown of cache writes by TTL, and the tier
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": written, "ephemeral_1h_input_tokens": 0}
        usage["service_tier"] = "standard"
    return usage


def _plan(state, conv: Conversation):
    prompt = conv.prompt_tokens()
    limit = state.config.max_context
    if (MAX_TOKENS_OVER_CONTEXT in state.faults and conv.max_tokens is not None
            and prompt <= limit and prompt + conv.max_tokens > limit):
        # vLLM-style: the length validation raises deep inside and surfaces as an internal error
        raise InvalidRequest(f"Internal Server Error: ValueError('max_tokens ({conv.max_tokens}) + prompt "
                             f"({prompt}) exceeds the model length')", status=500, kind="api_error")
    if prompt > limit:
        if OVER_LIMIT_NOT_REFUSED not in state.faults:
            raise InvalidRequest(f"prompt is too long: {prompt} tokens > {limit} maximum")
        conv.truncated_tokens = prompt - (limit - 1)
        prompt = limit - 1  # silently truncated: the engine reads only what fits
    ctx = planner.Context(state.faults, state.scenarios, limit, prompt)
    return planner.plan(conv, ctx), prompt


async def messages(request: web.Request, state, body: dict):
    faults = state.faults
    conv = parse(body, faults, betas=betas_of(request.headers))
    reply, prompt = _plan(state, conv)
    seed = ids.digest(json.dumps(body, sort_keys=True))
    msg_id = ids.make(wire.other_id("msg_01", "msg_bdrk_01"), seed, n=22)
    model = fault_modes.WRONG_MODEL_NAME if WRONG_MODEL in faults else conv.model
    blocks = content_blocks(reply, faults, seed, conv.thinking_display)
    reason, seq = _stop_reason(reply, faults)
    headers = {"request-id": ids.make("req_01", seed, time.time_ns(), n=22)}
    cached = lookup(state, messages_segments(body), prompt)
    if not conv.stream:
        out = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
               "stop_reason": reason, "stop_sequence": seq, "usage": _usage(prompt, reply.output_tokens, cached)}
        if TOOL_ARGS_INVALID_JSON in faults:
            for b in out["content"]:
                if b["type"] == "tool_use":
                    b["input"] = {}  # cannot carry broken JSON here: arguments that violate the schema
        if seq is None and NONSTREAM_STOP_SEQUENCE_OMITTED in faults:
            del out["stop_sequence"]
        return web.json_response(out, headers=headers)
    if NON_STREAM_FALLBACK in faults:
        return _unusable_stream(msg_id, model, blocks, reason, seq, _usage(prompt, reply.output_tokens, cached),
                                headers)
    resp = await start_sse(request, headers)
    try:
        await _stream(resp, msg_id, model, blocks, reason, seq, prompt, reply.output_tokens, faults, conv, cached)
    except ClientGone:
        pass
    return resp


def _unusable_stream(msg_id, model, blocks, reason, seq, usage, headers) -> web.Response:
    """Fault `non-stream-fallback`: the events as bare `data:` lines, served as text/plain (a proxy
    that rewrites the stream; claude-code-proxy PRs #32/#33): a client cannot use it."""
    message = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}
    events = [{"type": "message_start", "message": message}]
    for idx, b in enumerate(blocks):
        events.append({"type": "content_block_start", "index": idx, "content_block": b})
        events.append({"type": "content_block_stop", "index": idx})
    events += [{"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": seq}, "usage": usage},
               {"type": "message_stop"}]
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    return web.Response(text=text, content_type="text/plain", headers=headers)


async def _stream(resp, msg_id, model, blocks, reason, seq, prompt, output, faults, conv, cached=(0, 0)):
    # Prefill pacing covers what the cache did not hold: a cached prefix is not computed again.
    w = SSEWriter(resp, buffered=BUFFERED_STREAM in faults, prompt_tokens=prompt - cached[0])
    start = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": _usage(prompt, 1, cached)}
    if USAGE_INCONSISTENT in faults:  # output_tokens later "go down"; input_tokens change below
        start["usage"]["output_tokens"] = output + 10
    if MESSAGE_START_INCOMPLETE in faults:
        for k in ("type", "role", "usage"):
            del start[k]
    await w.event("message_start", {"type": "message_start", "message": start})
    await w.event("ping", {"type": "ping"})
    shift = 1 if BLOCK_INDEX_BROKEN in faults else 0
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
            if TOOL_USE_START_WITHOUT_INPUT in faults:
                del cb["input"]
            await w.event("content_block_start", {"type": "content_block_start", "index": idx, "content_block": cb})
            js = compact_json(b["input"])
            if TOOL_ARGS_INVALID_JSON in faults:
                js = js[:-1]
            for piece in split_json(js):
                await w.event("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                      "delta": {"type": "input_json_delta", "partial_json": piece}})
        await w.event("content_block_stop", {"type": "content_block_stop", "index": idx})
    delta = {"stop_reason": reason, "stop_sequence": seq}
    if STOP_SEQUENCE_MISSING in faults:
        del delta["stop_sequence"]
    usage = _usage(prompt + (17 if USAGE_INCONSISTENT in faults else 0), output, cached)
    await w.event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    if STREAM_TRUNCATED not in faults:
        await w.event("message_stop", {"type": "message_stop"})
    await w.close()


async def count_tokens_handler(request: web.Request):
    state = request.app[STATE]
    if COUNT_TOKENS_MISSING in state.faults:
        return error_response("anthropic", InvalidRequest(
            f"Not found: POST {request.path} is not served", status=404, kind="not_found_error"), state.faults)
    try:
        body = await read_json(request)
        conv = parse(body, state.faults, count_only=True)
    except InvalidRequest as e:
        return error_response("anthropic", e, state.faults)
    return web.json_response({"input_tokens": conv.prompt_tokens()})
