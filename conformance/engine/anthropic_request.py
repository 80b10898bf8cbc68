"""What POST /v1/messages and /v1/messages/count_tokens accept and refuse: the Anthropic request,
read into the engine's `Conversation`.

Rules (wire facts: the Anthropic Messages API reference):
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
- Refuses (400 invalid_request_error, the message names the field): missing/invalid model,
  max_tokens, messages; unknown block types; a tool_result whose tool_use_id matches no earlier
  tool_use; a thinking block sent back without its signature; thinking.budget_tokens < 1024 or
  >= max_tokens, except under interleaved thinking (beta `interleaved-thinking-2025-05-14` in
  `anthropic-beta`), where the budget spans every thinking block of the assistant turn and may
  exceed max_tokens (Anthropic docs, "Extended thinking", section "Interleaved thinking":
  https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#interleaved-thinking).
  The faults that refuse what a real stack refuses (a closed request struct,
  system entries, thinking.display, images in a tool_result, replayed history blocks) act here.
"""

from __future__ import annotations

from conformance.engine.conversation import (
    Conversation,
    InvalidRequest,
    Message,
    Tool,
    ToolCall,
    ToolResult,
    block_text,
    is_int,
    is_num,
    refuse_ungrammatical,
    require,
)
from conformance.engine.faults import (
    DEFERRED_TOOLS_EXPOSED,
    EMPTY_SYSTEM_ENTRY_REJECTED,
    FALLBACK_WORDING,
    HISTORY_BLOCK_REJECTED,
    STRICT_ADAPTIVE_EFFORT,
    STRICT_THINKING_DISPLAY,
    STRICT_UNKNOWN_FIELD,
    SYSTEM_ROLE_IN_MESSAGES,
    TOOL_REFERENCE_DROPPED,
    TOOL_RESULT_IMAGE_REJECTED,
)

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
# The beta under which budget_tokens may exceed max_tokens (docs/wire-facts.md).
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
# What a closed request struct (fault strict-unknown-field) knows.
CLOSED_FIELDS = {"model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature",
                 "top_p", "top_k", "tools", "tool_choice", "metadata", "thinking", "output_config",
                 "service_tier", "container", "mcp_servers"}


def betas_of(headers) -> frozenset[str]:
    """The betas an `anthropic-beta` header names (comma-separated; several headers joined)."""
    values = headers.getall("anthropic-beta", []) if hasattr(headers, "getall") else [headers.get("anthropic-beta") or ""]
    return frozenset(b.strip() for v in values for b in str(v).split(",") if b.strip())


def parse(body: dict, faults, *, count_only: bool = False, betas: frozenset[str] = frozenset()) -> Conversation:
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
    # Under interleaved thinking the budget is not bounded by max_tokens (see the module rules).
    capped = not count_only and INTERLEAVED_THINKING_BETA not in betas
    thinking, display = _parse_thinking(body, max_tokens, faults, capped)
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


def _parse_tool_choice(tc):
    if tc is None:
        return "auto", None
    require(isinstance(tc, dict) and tc.get("type") in ("auto", "any", "tool", "none"),
            "tool_choice: Input should be {type: auto|any|tool|none}")
    if tc["type"] == "tool":
        require(isinstance(tc.get("name"), str), "tool_choice.name: Field required")
        return "tool", tc["name"]
    return tc["type"], None


def _parse_thinking(body, max_tokens, faults, capped):
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
        if capped and is_int(max_tokens):
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
