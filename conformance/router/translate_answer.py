"""Pure translation of an OpenAI chat-completions answer back to the Anthropic Messages wire
(router side): a whole message, or a stream chunk by chunk.

Rules:
- No I/O here: functions over parsed JSON, so every mapping is testable without a server.
- The mapping follows LiteLLM's `/v1/messages` adapter (facts cited in translate.py): finish_reason
  stop -> end_turn, length -> max_tokens, tool_calls -> tool_use (a stop string the engine names as
  matched -> stop_sequence); usage input_tokens = prompt_tokens - cached, the cached part as
  cache_read_input_tokens; `reasoning_content` -> a thinking block without a signature.
- Nothing is repaired: arguments that do not parse pass through as they came (an engine that
  sends broken arguments shows up broken, which is what attribution needs); an upstream stream that
  breaks off before its finish ends with an error event, not a clean stop.
"""

from __future__ import annotations

import json
import time
from typing import Any

FINISH_TO_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


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
