"""The Anthropic events on their way to the client (router side): the response-side faults, the
SSE encoding, and the minimal SSE reader of upstream streams.

Rules:
- `EventFilter` applies the response-side router faults to Anthropic events (stream) or a message
  (non-stream), so the translating and the pass-through paths share them.
- The router reads upstream streams with its own `SSELines` (the judge's decoder is not used: the
  doubles share no code with the judge).
"""

from __future__ import annotations

import json

from conformance.router.translate import rewritten_id


class EventFilter:
    """Applies response-side router faults to Anthropic events (stream) or a message (non-stream)."""

    def __init__(self, *, drop_thinking: bool = False, rewrite_tool_ids: bool = False,
                 drop_stop_sequence: bool = False, model_label: str | None = None,
                 first_tool_call_only: bool = False) -> None:
        self.drop_thinking = drop_thinking
        self.rewrite_tool_ids = rewrite_tool_ids
        self.drop_stop_sequence = drop_stop_sequence
        self.model_label = model_label
        # keeps only the first tool_use block: the later ones vanish whole and the indices close
        # up, so the client's stream is clean and only the engine's own answer shows the loss
        self.first_tool_call_only = first_tool_call_only
        self.tool_calls = 0
        self.dropped: set[int] = set()

    def _drops(self, block: dict) -> bool:
        kind = block.get("type")
        if self.drop_thinking and kind in ("thinking", "redacted_thinking"):
            return True
        if self.first_tool_call_only and kind == "tool_use":
            self.tool_calls += 1
            return self.tool_calls > 1
        return False

    def _shift(self, index: int) -> int:
        return index - sum(1 for d in self.dropped if d < index)

    def event(self, event: dict) -> dict | None:
        kind = event.get("type")
        if kind == "message_start" and self.model_label:
            event = dict(event, message=dict(event.get("message") or {}, model=self.model_label))
        if kind in ("content_block_start", "content_block_delta", "content_block_stop") and isinstance(event.get("index"), int):
            index = event["index"]
            if kind == "content_block_start" and self._drops(event.get("content_block") or {}):
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
            if self._drops(block):
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
