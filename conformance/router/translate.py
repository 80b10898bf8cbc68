"""Pure translation between the Anthropic Messages wire and OpenAI chat completions (router side).

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
- Response-side faults are applied by `EventFilter` to Anthropic events, so the translating and
  the pass-through paths share them.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

# What the correct router sends as reasoning_effort for each Anthropic effort. Engines behind
# OpenAI chat (vLLM, llama.cpp, SGLang) accept low|medium|high; newer OpenAI values are clamped.
EFFORT_TO_REASONING = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
# LiteLLM's budget buckets (litellm/constants.py DEFAULT_REASONING_EFFORT_*_THINKING_BUDGET).
BUDGET_BUCKETS = ((4096, "high"), (2048, "medium"), (1024, "low"))

FINISH_TO_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

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


# ---------------------------------------------------------------- OpenAI -> Anthropic response

def map_finish(finish: str | None, matched_stop: Any, request: dict) -> tuple[str, str | None]:
    """(stop_reason, stop_sequence). vLLM reports the matched stop string as choice.stop_reason."""
    if finish == "stop" and isinstance(matched_stop, str) and matched_stop in (request.get("stop_sequences") or []):
        return "stop_sequence", matched_stop
    return FINISH_TO_STOP.get(finish or "stop", "end_turn"), None


def anthropic_usage(usage: dict | None) -> dict:
    usage = usage or {}
    cached = 0
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        cached = int(details.get("cached_tokens") or 0)
    out = {
        "input_tokens": max(int(usage.get("prompt_tokens") or 0) - cached, 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
    }
    if cached:
        out["cache_read_input_tokens"] = cached
    return out


def _parse_arguments(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        return arguments
    try:
        return json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {"_unparsed_arguments": arguments}


def openai_response_to_anthropic(resp: dict, request: dict) -> dict:
    choice = (resp.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        content.append({"type": "thinking", "thinking": str(reasoning), "signature": ""})
    if message.get("content"):
        content.append({"type": "text", "text": str(message["content"])})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id") or "", "name": fn.get("name", ""), "input": _parse_arguments(fn.get("arguments"))})
    stop_reason, stop_sequence = map_finish(choice.get("finish_reason"), choice.get("stop_reason"), request)
    return {
        "id": "msg_" + str(resp.get("id") or int(time.time() * 1000)).replace("chatcmpl-", ""),
        "type": "message",
        "role": "assistant",
        "model": resp.get("model") or request.get("model", ""),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": anthropic_usage(resp.get("usage")),
    }


class StreamTranslator:
    """OpenAI chat-completion chunks -> Anthropic stream events, one chunk at a time.

    feed(chunk) and finish() return lists of event dicts (each has its `type`). Blocks are opened
    in arrival order: reasoning -> thinking, content -> text, each tool-call index -> tool_use.
    Arguments fragments are passed through as they arrive (no repair: an engine that sends broken
    arguments shows up broken, which is what attribution needs).
    """

    def __init__(self, request: dict, model: str) -> None:
        self.request = request
        self.model = model
        self.started = False
        self.block_index = -1
        self.block_kind: str | None = None
        self.tool_blocks: dict[int, int] = {}  # openai tool index -> anthropic block index
        self.finish: str | None = None
        self.matched_stop: Any = None
        self.usage: dict | None = None
        self.done = False
        self.message_id = f"msg_{int(time.time() * 1000)}"

    def _start(self, chunk: dict) -> list[dict]:
        if self.started:
            return []
        self.started = True
        if chunk.get("id"):
            self.message_id = "msg_" + str(chunk["id"]).replace("chatcmpl-", "")
        if chunk.get("model"):
            self.model = chunk["model"]
        return [
            {
                "type": "message_start",
                "message": {
                    "id": self.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            }
        ]

    def _close(self) -> list[dict]:
        if self.block_kind is None:
            return []
        self.block_kind = None
        return [{"type": "content_block_stop", "index": self.block_index}]

    def _open(self, kind: str, block: dict) -> list[dict]:
        events = self._close()
        self.block_index += 1
        self.block_kind = kind
        events.append({"type": "content_block_start", "index": self.block_index, "content_block": block})
        return events

    def feed(self, chunk: dict) -> list[dict]:
        if "error" in chunk and not chunk.get("choices"):
            error = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
            return [{"type": "error", "error": {"type": "api_error", "message": str(error.get("message", error))}}]
        events = self._start(chunk)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                if self.block_kind != "thinking":
                    events += self._open("thinking", {"type": "thinking", "thinking": "", "signature": ""})
                events.append({"type": "content_block_delta", "index": self.block_index, "delta": {"type": "thinking_delta", "thinking": str(reasoning)}})
            text = delta.get("content")
            if text:
                if self.block_kind != "text":
                    events += self._open("text", {"type": "text", "text": ""})
                events.append({"type": "content_block_delta", "index": self.block_index, "delta": {"type": "text_delta", "text": text}})
            for call in delta.get("tool_calls") or []:
                index = call.get("index", len(self.tool_blocks))
                fn = call.get("function") or {}
                if index not in self.tool_blocks:
                    events += self._open(
                        "tool_use",
                        {"type": "tool_use", "id": call.get("id") or f"toolu_{self.message_id}_{index}", "name": fn.get("name") or "", "input": {}},
                    )
                    self.tool_blocks[index] = self.block_index
                elif self.tool_blocks[index] != self.block_index:
                    continue  # fragments of an earlier, already closed call: nowhere to put them
                arguments = fn.get("arguments")
                if arguments not in (None, ""):
                    events.append({"type": "content_block_delta", "index": self.block_index, "delta": {"type": "input_json_delta", "partial_json": arguments}})
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
                self.matched_stop = choice.get("stop_reason")
        return events

    def finish_events(self, *, upstream_complete: bool) -> list[dict]:
        """Close the message. Without a finish_reason and [DONE] the upstream broke off: say so
        with an error event instead of inventing a clean end."""
        events = self._start({}) if not self.started else []
        if not upstream_complete and self.finish is None:
            events += self._close()
            events.append({"type": "error", "error": {"type": "api_error", "message": "upstream stream ended before finish_reason"}})
            return events
        events += self._close()
        stop_reason, stop_sequence = map_finish(self.finish, self.matched_stop, self.request)
        events.append(
            {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence}, "usage": anthropic_usage(self.usage)}
        )
        events.append({"type": "message_stop"})
        return events


# ---------------------------------------------------------------- response-side faults

class EventFilter:
    """Applies response-side router faults to Anthropic events (stream) or a message (non-stream)."""

    def __init__(self, *, drop_thinking: bool = False, rewrite_tool_ids: bool = False,
                 drop_stop_sequence: bool = False, model_label: str | None = None) -> None:
        self.drop_thinking = drop_thinking
        self.rewrite_tool_ids = rewrite_tool_ids
        self.drop_stop_sequence = drop_stop_sequence
        self.model_label = model_label
        self.dropped: set[int] = set()

    def _shift(self, index: int) -> int:
        return index - sum(1 for d in self.dropped if d < index)

    def event(self, event: dict) -> dict | None:
        kind = event.get("type")
        if kind == "message_start" and self.model_label:
            event = dict(event, message=dict(event.get("message") or {}, model=self.model_label))
        if kind in ("content_block_start", "content_block_delta", "content_block_stop") and isinstance(event.get("index"), int):
            index = event["index"]
            if kind == "content_block_start" and self.drop_thinking and (event.get("content_block") or {}).get("type") in ("thinking", "redacted_thinking"):
                self.dropped.add(index)
            if index in self.dropped:
                return None
            event = dict(event, index=self._shift(index))
            block = event.get("content_block")
            if kind == "content_block_start" and self.rewrite_tool_ids and isinstance(block, dict) and block.get("type") == "tool_use":
                event["content_block"] = dict(block, id=rewritten_id(str(block.get("id", ""))))
        if kind == "message_delta" and self.drop_stop_sequence:
            delta = {k: v for k, v in (event.get("delta") or {}).items() if k != "stop_sequence"}
            event = dict(event, delta=delta)
        return event

    def message(self, message: dict) -> dict:
        message = dict(message)
        if self.model_label:
            message["model"] = self.model_label
        content = []
        for block in message.get("content") or []:
            if self.drop_thinking and block.get("type") in ("thinking", "redacted_thinking"):
                continue
            if self.rewrite_tool_ids and block.get("type") == "tool_use":
                block = dict(block, id=rewritten_id(str(block.get("id", ""))))
            content.append(block)
        message["content"] = content
        if self.drop_stop_sequence:
            message.pop("stop_sequence", None)
        return message


def sse(event: dict) -> bytes:
    return f"event: {event.get('type', 'message')}\ndata: {json.dumps(event, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


class SSELines:
    """A minimal SSE reader for upstream streams (router side: the judge's decoder is not used)."""

    def __init__(self) -> None:
        self.buffer = b""
        self.event: str | None = None
        self.data: list[str] = []

    def feed(self, data: bytes) -> list[tuple[str | None, str]]:
        self.buffer += data
        out = []
        while True:
            cut = self.buffer.find(b"\n")
            if cut < 0:
                return out
            line = self.buffer[:cut].rstrip(b"\r").decode("utf-8", "replace")
            self.buffer = self.buffer[cut + 1:]
            if line == "":
                if self.data:
                    out.append((self.event, "\n".join(self.data)))
                self.event, self.data = None, []
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    self.event = value
                elif name == "data":
                    self.data.append(value)

    def close(self) -> list[tuple[str | None, str]]:
        out = self.feed(b"\n\n") if (self.buffer or self.data) else []
        return out
