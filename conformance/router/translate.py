"""Pure translation of a request from the Anthropic Messages wire to OpenAI chat completions
(router side); the answer's way back is `translate_answer.py`, the events to the client `events.py`.

Rules:
- No I/O here: functions over parsed JSON, so every mapping is testable without a server.
- The mapping follows what the real routers do (facts, cited; no code carried over):
  * LiteLLM's `/v1/messages` adapter (litellm/llms/anthropic/experimental_pass_through/adapters/
    transformation.py): system blocks -> a leading `system` message; `tool_use` -> assistant
    `tool_calls` (arguments = JSON of `input`); `tool_result` -> `role: tool` messages placed before
    the user's text; tools -> `{type: function, function: {name, description, parameters}}`;
    tool_choice any -> "required", tool -> {type: function, function: {name}}; metadata.user_id ->
    `user`; thinking -> `reasoning_effort` (adaptive: `output_config.effort`; enabled: budget
    buckets low >= 1024, medium >= 2048, high >= 4096 tokens, from litellm/constants.py);
    finish_reason stop -> end_turn, length -> max_tokens, tool_calls -> tool_use; usage
    input_tokens = prompt_tokens - cached; `reasoning_content` -> a thinking block without a
    signature. cache_control is kept only for Claude upstreams (dropped for an OpenAI engine).
  * claude-code-router's Anthropic transformer (@musistudio/llms): same shapes; it drops
    `role: system` entries inside messages and assistant thinking blocks, and JSON-stringifies
    list-valued tool results.
  This reference router is the *correct* variant: it keeps mid-conversation system messages,
  sends assistant thinking back as `reasoning_content` (the vLLM / DeepSeek field), keeps tool ids
  verbatim, clamps effort to the values every OpenAI-compatible engine accepts (low|medium|high:
  xhigh/max -> high) and drops only what OpenAI chat cannot carry (signatures, cache_control,
  context_management), which the translation report lists as lost.
- Request-side faults (`make_lossy`) act here; response-side ones in `events.EventFilter`.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

# What the correct router sends as reasoning_effort for each Anthropic effort. Engines behind
# OpenAI chat (vLLM, llama.cpp, SGLang) accept low|medium|high; newer OpenAI values are clamped.
EFFORT_TO_REASONING = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
# LiteLLM's budget buckets (litellm/constants.py DEFAULT_REASONING_EFFORT_*_THINKING_BUDGET).
BUDGET_BUCKETS = ((4096, "high"), (2048, "medium"), (1024, "low"))

# A prompt that looks like a prompt injection. The router's injection route strips tools so the
# text reaches the model as inert data. Deliberately narrow: a test double, not a classifier.
INJECTION_RE = re.compile(
    r"ignore (all |any )?(of )?(the )?(previous|prior|above|earlier) (instructions|prompts?)"
    r"|disregard (all |any )?(previous|prior|your) (instructions|rules)"
    r"|you are now (in )?(developer|dan|jailbreak) mode",
    re.IGNORECASE,
)


# ---------------------------------------------------------------- request inspection

def user_texts(message: dict) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
    return out


def last_user_text(body: dict) -> str:
    """The last user-authored text of the conversation (tool results are not user-authored)."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            texts = [t for t in user_texts(message) if t.strip()]
            if texts:
                return texts[-1]
    return ""


def is_quoted(text: str) -> bool:
    """opencode's wire variant: the whole prompt wrapped in literal double quotes."""
    t = text.strip()
    return len(t) >= 2 and t[0] == '"' and t[-1] == '"'


def looks_like_injection(body: dict) -> bool:
    return bool(INJECTION_RE.search(last_user_text(body)))


def reasoning_effort_for(body: dict) -> tuple[str | None, str]:
    """The reasoning_effort to send and the human-readable mapping that produced it."""
    thinking = body.get("thinking")
    effort = (body.get("output_config") or {}).get("effort") if isinstance(body.get("output_config"), dict) else None
    if isinstance(thinking, dict) and thinking.get("type") == "disabled":
        return None, "thinking disabled -> reasoning_effort omitted"
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = int(thinking.get("budget_tokens") or 0)
        for floor, name in BUDGET_BUCKETS:
            if budget >= floor:
                return name, f"thinking.budget_tokens {budget} -> reasoning_effort {name}"
        return "low", f"thinking.budget_tokens {budget} -> reasoning_effort low"
    if effort:
        mapped = EFFORT_TO_REASONING.get(str(effort), "medium")
        return mapped, f"output_config.effort {effort} -> reasoning_effort {mapped}"
    if isinstance(thinking, dict) and thinking.get("type") == "adaptive":
        return "medium", "thinking adaptive (no effort) -> reasoning_effort medium"
    return None, ""


# ---------------------------------------------------------------- request-side faults

def rewritten_id(original: str) -> str:
    return "toolu_rw_" + hashlib.sha1(original.encode()).hexdigest()[:12]


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def make_lossy(body: dict) -> dict:
    """The lossy-translation fault on the request: thinking, signatures, cache_control dropped;
    tool_result ids rewritten (the router's id map is lost), so results no longer pair."""
    body = strip_cache_control(json.loads(json.dumps(body)))
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        kept = []
        for block in content:
            if not isinstance(block, dict):
                kept.append(block)
                continue
            if block.get("type") in ("thinking", "redacted_thinking"):
                continue
            if block.get("type") == "tool_result" and block.get("tool_use_id"):
                block = dict(block, tool_use_id=rewritten_id(str(block["tool_use_id"])))
            kept.append(block)
        message["content"] = kept or ""
    return body


# ---------------------------------------------------------------- Anthropic -> OpenAI request

def _text_of_blocks(blocks: Any) -> str:
    if isinstance(blocks, str):
        return blocks
    parts = []
    for block in blocks or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def _image_part(block: dict) -> dict | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        return {"type": "image_url", "image_url": {"url": f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"}}
    if source.get("type") == "url":
        return {"type": "image_url", "image_url": {"url": source.get("url", "")}}
    return None


def _user_messages(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    tool_messages: list[dict] = []
    parts: list[dict] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_result":
            tool_messages.append(
                {"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")), "content": _text_of_blocks(block.get("content", ""))}
            )
        elif kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind in ("image", "document"):
            image = _image_part(block)
            if image:
                parts.append(image)
    out = list(tool_messages)  # tool messages must follow the assistant's tool_calls directly
    if parts:
        if all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    return out


def _assistant_message(message: dict) -> dict:
    content = message.get("content")
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts, calls, reasoning = [], [], []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(
                {
                    "id": str(block.get("id", "")),
                    "type": "function",
                    "function": {"name": block.get("name", ""), "arguments": json.dumps(block.get("input", {}), ensure_ascii=False)},
                }
            )
        elif kind == "thinking":
            reasoning.append(str(block.get("thinking", "")))
    out: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    if reasoning:
        out["reasoning_content"] = "\n".join(reasoning)
    if out["content"] is None and not calls:
        out["content"] = ""
    return out


def anthropic_to_openai(body: dict, *, model: str, drop_tools: bool = False) -> tuple[dict, list[str]]:
    """Translate an Anthropic Messages body to an OpenAI chat-completions body.

    Returns (openai_body, notes): notes say, in words, what was mapped or dropped.
    """
    notes: list[str] = []
    messages: list[dict] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of_blocks(system)})
    for message in body.get("messages") or []:
        role = message.get("role")
        if role == "user":
            messages.extend(_user_messages(message))
        elif role == "assistant":
            messages.append(_assistant_message(message))
        elif role == "system":  # mid-conversation system entry (Claude Code sends one)
            messages.append({"role": "system", "content": _text_of_blocks(message.get("content", ""))})
    out: dict[str, Any] = {"model": model, "messages": messages}
    if "max_tokens" in body:
        out["max_tokens"] = body["max_tokens"]
    for key in ("temperature", "top_p", "top_k"):
        if key in body:
            out[key] = body[key]
    if body.get("stop_sequences"):
        out["stop"] = list(body["stop_sequences"])
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and metadata.get("user_id"):
        out["user"] = str(metadata["user_id"])
    tools = body.get("tools") or []
    if tools and not drop_tools:
        out["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.get("name", ""),
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema") or {"type": "object", "properties": {}},
                },
            }
            for t in tools
            if isinstance(t, dict) and t.get("type") in (None, "custom")
        ]
        skipped = [t.get("name") for t in tools if isinstance(t, dict) and t.get("type") not in (None, "custom")]
        if skipped:
            notes.append(f"server tools not forwarded (OpenAI chat has none): {skipped}")
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            kind = choice.get("type")
            if kind == "auto":
                out["tool_choice"] = "auto"
            elif kind == "any":
                out["tool_choice"] = "required"
            elif kind == "tool":
                out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name", "")}}
            elif kind == "none":
                out["tool_choice"] = "none"
            if choice.get("disable_parallel_tool_use"):
                out["parallel_tool_calls"] = False
    elif tools and drop_tools:
        notes.append(f"injection route: {len(tools)} tools stripped")
    effort, mapping = reasoning_effort_for(body)
    if effort:
        out["reasoning_effort"] = effort
    if mapping:
        notes.append(mapping)
    if "context_management" in body:
        notes.append("context_management dropped (OpenAI chat has no equivalent)")
    if body.get("stream"):
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    return out, notes
