"""POST /v1/messages (stream and non-stream, `?beta=true` accepted) and /v1/messages/count_tokens.

Rules (wire facts: the Anthropic Messages API reference and its streaming docs):
- Accepts everything the real clients send: `context_management`, adaptive thinking with
  `output_config.effort` up to xhigh/max, `{"role":"system"}` entries inside messages,
  `metadata.user_id` strings, `cache_control` on any block, `eager_input_streaming` on tools,
  every `tool_choice` form, unknown top-level fields (ignored, as an engine does), `thinking.display`,
  a `{"role":"system"}` entry with `content: []`, images inside a `tool_result`, and replayed
  history blocks without deltas (`redacted_thinking`, `server_tool_use`, `*_tool_result`).
- Deferred tools (`defer_loading: true`, Claude Code 2.1.332 beside its ToolSearch tool) are not
  offered to the model until a `tool_reference` block inside a `tool_result` names them; a forced
  `tool_choice` naming one that was not loaded is a 400 that says so. A `tool_reference` naming no
  offered or deferred tool is a 400.
- `max_tokens` above what the context leaves (128000 from Claude Code 2.1.332) is clamped to it.
- Prefix cache (as the Messages API's prompt caching): the prompt is read in the API's cache order
  (tools, system, messages); a prefix ending at a `cache_control` breakpoint of at least
  PREFIX_CACHE_MIN_TOKENS is written to the cache, and every block boundary up to the last
  breakpoint is looked up, so a later turn reads what an earlier one wrote. Usage reports
  `cache_read_input_tokens` / `cache_creation_input_tokens` apart from `input_tokens`. Claude
  Code's first system block (`x-anthropic-billing-header: cc_version=...`, its suffix differs per
  conversation) is client metadata, left out of the cache key as llama.cpp does (PR #21793), so
  conversations share the system prompt and tools. Stream prefill pacing (`--prefill-rate`)
  counts only the prompt tokens not read from the cache; every lookup adds to the /metrics
  counters (metrics.py).
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
from conformance.engine import ids, planner, tokenizer, wire
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
from conformance.engine.faults import (
    BLOCK_INDEX_BROKEN,
    BUFFERED_STREAM,
    COUNT_TOKENS_MISSING,
    DEFERRED_TOOLS_EXPOSED,
    EMPTY_SYSTEM_ENTRY_REJECTED,
    FALLBACK_WORDING,
    HISTORY_BLOCK_REJECTED,
    MAX_TOKENS_OVER_CONTEXT,
    MESSAGE_START_INCOMPLETE,
    NON_STREAM_FALLBACK,
    NONSTREAM_STOP_SEQUENCE_OMITTED,
    OVER_LIMIT_NOT_REFUSED,
    PARALLEL_CALLS_TRUNCATED,
    PREFIX_CACHE_DEFEATED,
    SCHEMA_GRAMMAR_FAIL,
    STOP_REASON_WRONG_ON_STOP_STRING,
    STOP_SEQUENCE_MISSING,
    STREAM_TRUNCATED,
    STRICT_ADAPTIVE_EFFORT,
    STRICT_THINKING_DISPLAY,
    STRICT_UNKNOWN_FIELD,
    SYSTEM_ROLE_IN_MESSAGES,
    TOOL_ARGS_INVALID_JSON,
    TOOL_CALL_AS_TEXT,
    TOOL_REFERENCE_DROPPED,
    TOOL_RESULT_IMAGE_REJECTED,
    TOOL_STOP_REASON_WRONG,
    TOOL_USE_START_WITHOUT_INPUT,
    USAGE_INCONSISTENT,
    WRONG_MODEL,
)
from conformance.engine.metrics import record_prefix_query
from conformance.engine.state import STATE, error_response, read_json
from conformance.engine.wire import ClientGone, SSEWriter, split_json, split_text, start_sse

BLOCK_TYPES = {
    "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "search_result",
    "container_upload", "mcp_tool_use", "mcp_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_reference",
}
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# Blocks replayed in history that carry no deltas and no text the engine reads.
HISTORY_ONLY_BLOCKS = {"redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
                       "code_execution_tool_result", "bash_code_execution_tool_result",
                       "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result"}
# The first system block of every Claude Code request: per-conversation client metadata.
BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"
# The Messages API caches no prefix shorter than this (the smallest documented minimum).
PREFIX_CACHE_MIN_TOKENS = 1024
PREFIX_CACHE_KEEP = 512
# What a closed request struct (fault strict-unknown-field) knows.
CLOSED_FIELDS = {"model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature",
                 "top_p", "top_k", "tools", "tool_choice", "metadata", "thinking", "output_config",
                 "service_tier", "container", "mcp_servers"}


def parse(body: dict, faults, *, count_only: bool = False) -> Conversation:
    if STRICT_UNKNOWN_FIELD in faults:
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
    tools, deferred = _parse_tools(body.get("tools"), faults)
    choice, choice_name = _parse_tool_choice(body.get("tool_choice"))
    tc = body.get("tool_choice")
    parallel = not (isinstance(tc, dict) and tc.get("disable_parallel_tool_use") is True)
    thinking, display = _parse_thinking(body, max_tokens, faults, count_only)
    loaded: list[str] = []
    messages = _parse_messages(body.get("messages"), faults, loaded)
    known = {t.name for t in tools} | set(deferred)
    for name in loaded:
        require(name in known, f"tool_reference names the tool {name!r}, which is neither in tools nor deferred")
        if name in deferred:
            tools.append(deferred.pop(name))
    if choice == "tool" and choice_name in deferred and TOOL_REFERENCE_DROPPED not in faults:
        # (An engine that drops tool_reference blocks knows no deferred tools either: the forced name
        # falls through to the planner, which calls the first tool instead.)
        raise InvalidRequest(f"tool_choice.name: the tool {choice_name!r} has defer_loading and no tool_reference "
                             "has loaded it yet")
    refuse_ungrammatical(tools, choice, choice_name, faults)
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


def _parse_tools(tools, faults) -> tuple[list[Tool], dict[str, Tool]]:
    """(the tools offered to the model, the deferred ones by name, offered once a tool_reference loads them)."""
    if tools is None:
        return [], {}
    require(isinstance(tools, list), "tools: Input should be a list")
    out = []
    deferred: dict[str, Tool] = {}
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
        if "defer_loading" in t:
            require(isinstance(t["defer_loading"], bool), f"tools.{i}.defer_loading: Input should be a valid boolean")
        if t.get("defer_loading") is True and DEFERRED_TOOLS_EXPOSED not in faults:
            deferred[t["name"]] = Tool(t["name"], schema, t.get("description") or "")
            continue
        if t.get("defer_loading") is True:  # the fault: a plain function whose schema carries the flag
            schema = {**schema, "defer_loading": True}
        out.append(Tool(t["name"], schema, t.get("description") or ""))
    return out, deferred


def refuse_ungrammatical(tools: list[Tool], choice: str, choice_name: str | None, faults) -> None:
    """Fault `schema-grammar-fail`: a constrained decoder that cannot compile a `pattern` keyword
    fails the forced tool's grammar with a 500 (lmstudio-bug-tracker #2220; llama.cpp #28340)."""
    if SCHEMA_GRAMMAR_FAIL not in faults or choice not in ("any", "tool", "required"):
        return
    forced = [t for t in tools if choice != "tool" or t.name == choice_name]
    for t in forced:
        if '"pattern"' in json.dumps(t.schema):
            raise InvalidRequest(f"failed to parse grammar: the schema of tool {t.name!r} uses `pattern`",
                                 status=500, kind="api_error")


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
    if "display" in th and STRICT_THINKING_DISPLAY in faults:
        raise InvalidRequest(f"thinking.{th['type']}.display: Extra inputs are not permitted")
    if th["type"] == "adaptive" and effort is not None and STRICT_ADAPTIVE_EFFORT in faults:
        raise InvalidRequest("thinking.type 'adaptive' cannot be combined with output_config.effort")
    display = th.get("display") or "summarized"
    return th["type"] != "disabled", display


def _parse_messages(messages, faults, loaded: list[str]) -> list[Message]:
    """The messages; the names of tools that tool_reference blocks load are appended to `loaded`."""
    require(isinstance(messages, list), "messages: Field required (a list)")
    require(len(messages) > 0, "messages: at least one message is required")
    out: list[Message] = []
    seen_tool_ids: set[str] = set()
    for i, m in enumerate(messages):
        require(isinstance(m, dict), f"messages.{i}: Input should be an object")
        role = m.get("role")
        require(role in ("user", "assistant", "system"), f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if role == "system" and SYSTEM_ROLE_IN_MESSAGES in faults:
            raise InvalidRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        if role == "system" and FALLBACK_WORDING in faults:
            raise InvalidRequest(f"messages.{i}: this message kind is not accepted at this position")
        content = m.get("content")
        if role == "system" and content == [] and EMPTY_SYSTEM_ENTRY_REJECTED in faults:
            raise InvalidRequest(f"messages.{i}.content: a system message must have at least one content block")
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
            if typ in HISTORY_ONLY_BLOCKS and HISTORY_BLOCK_REJECTED in faults:
                raise InvalidRequest(f"{where}: Input tag '{typ}' found using 'type' does not match any of the "
                                     "expected tags")
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
                inner = b.get("content")
                for k, part in enumerate(inner if isinstance(inner, list) else []):
                    kind = part.get("type") if isinstance(part, dict) else None
                    if kind == "image" and TOOL_RESULT_IMAGE_REJECTED in faults:
                        raise InvalidRequest(f"{where}.content.{k}: image blocks are not supported inside tool_result")
                    if kind == "tool_reference":
                        require(isinstance(part.get("tool_name"), str), f"{where}.content.{k}.tool_name: Field required")
                        if TOOL_REFERENCE_DROPPED not in faults:
                            loaded.append(part["tool_name"])
                msg.results.append(ToolResult(tid, block_text(inner), bool(b.get("is_error"))))
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


class PrefixCache:
    """Prefixes by the digest of everything up to a block boundary -> their token count."""

    def __init__(self) -> None:
        self.entries: dict[str, int] = {}

    def serve(self, body: dict, prompt: int, segments=None) -> tuple[int, int]:
        """(tokens read, tokens written) for this request; writes its breakpoints. `segments`:
        (text, breakpoint) in cache order (default: the Messages API's, `_cache_segments`)."""
        import hashlib

        h = hashlib.sha256()
        tokens = 0
        boundaries: list[tuple[str, int, bool]] = []  # (digest, tokens so far, a breakpoint)
        for text, breakpoint in (_cache_segments(body) if segments is None else segments):
            h.update(text.encode("utf-8", "replace") + b"\x00")
            tokens += tokenizer.count(text)
            boundaries.append((h.hexdigest(), tokens, breakpoint))
        last = max((k for k, b in enumerate(boundaries) if b[2]), default=-1)
        if last < 0 or tokens == 0:
            return 0, 0
        # Segments are counted over their JSON; usage counts what the model reads: scale to it, and
        # the last prompt token is always computed.
        def scaled(n: int) -> int:
            return min(max(0, prompt - 1), n * prompt // tokens)

        read = scaled(max((n for d, n, _ in boundaries[:last + 1] if d in self.entries), default=0))
        top = scaled(boundaries[last][1])
        for d, n, b in boundaries[:last + 1]:
            if b and scaled(n) >= PREFIX_CACHE_MIN_TOKENS:
                self.entries.pop(d, None)
                self.entries[d] = n
        while len(self.entries) > PREFIX_CACHE_KEEP:
            self.entries.pop(next(iter(self.entries)))
        written = top - read if top >= PREFIX_CACHE_MIN_TOKENS and top > read else 0
        return read, written


def _cache_segments(body: dict):
    """(text, is a cache_control breakpoint) in the API's cache order: tools, system, messages."""
    def marked(b) -> bool:
        return isinstance(b, dict) and isinstance(b.get("cache_control"), dict)

    for t in body.get("tools") or []:
        yield compact_json(t if not marked(t) else {k: v for k, v in t.items() if k != "cache_control"}), marked(t)
    system = body.get("system")
    for b in ([{"type": "text", "text": system}] if isinstance(system, str) else system or []):
        text = b.get("text", "") if isinstance(b, dict) else ""
        if isinstance(text, str) and text.startswith(BILLING_HEADER_PREFIX):
            continue  # per-conversation client metadata: not part of the shared prefix
        yield str(text), marked(b)
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        role = m.get("role") if isinstance(m, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        yield f"<{role}>", False
        for b in blocks:
            if isinstance(b, dict):
                yield compact_json({k: v for k, v in b.items() if k != "cache_control"}), marked(b)


def prefix_cache(state) -> PrefixCache:
    """The engine's one prefix cache (kept on its state, made on first use)."""
    cache = vars(state).get("prefix_cache")
    if cache is None:
        cache = vars(state).setdefault("prefix_cache", PrefixCache())
    return cache


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
    conv = parse(body, faults)
    reply, prompt = _plan(state, conv)
    seed = ids.digest(json.dumps(body, sort_keys=True))
    msg_id = ids.make(wire.other_id("msg_01", "msg_bdrk_01"), seed, n=22)
    model = fault_modes.WRONG_MODEL_NAME if WRONG_MODEL in faults else conv.model
    blocks = content_blocks(reply, faults, seed, conv.thinking_display)
    reason, seq = _stop_reason(reply, faults)
    headers = {"request-id": ids.make("req_01", seed, time.time_ns(), n=22)}
    cached = (0, 0) if PREFIX_CACHE_DEFEATED in faults else prefix_cache(state).serve(body, prompt)
    record_prefix_query(state, prompt, cached[0])
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
